#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(void){
 int fd=open("/proc/self/exe",O_RDONLY); const int N=20000; double t0,t1; struct stat st;
 t0=now(); for(int i=0;i<N;i++){int d=fcntl(fd,F_DUPFD_CLOEXEC,0); close(d);} t1=now();
 printf("dup+close %.2f us\n",(t1-t0)/N*1e6);
 t0=now(); for(int i=0;i<N;i++) fstat(fd,&st); t1=now();
 printf("fstat %.2f us\n",(t1-t0)/N*1e6);
 t0=now(); for(int i=0;i<N;i++) getppid(); t1=now();
 printf("getppid %.2f us\n",(t1-t0)/N*1e6);
 volatile unsigned long s=0; t0=now(); for(long i=0;i<N*1000L;i++) s+=i^(s>>3); t1=now();
 printf("1000-iteration loop (~5000 instr) %.2f us\n",(t1-t0)/N*1e6);
 return 0;}
