#include <stdio.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/eventfd.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <stdlib.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(void){
  int n=20000; double t0,t1;
  t0=now(); for(int i=0;i<n;i++) syscall(SYS_getppid); t1=now();
  printf("getppid %.2f us\n",(t1-t0)/n*1e6);
  int ep=epoll_create1(0), ep2=epoll_create1(0), ev=eventfd(0,0);
  struct epoll_event e={.events=EPOLLIN,.data.u64=1};
  epoll_ctl(ep,EPOLL_CTL_ADD,ev,&e);
  e.events=0; epoll_ctl(ep2,EPOLL_CTL_ADD,ep,&e);
  t0=now(); for(int i=0;i<n;i++){ e.events=(i&1)?0:(EPOLLIN|EPOLLONESHOT); epoll_ctl(ep2,EPOLL_CTL_MOD,ep,&e);} t1=now();
  printf("epoll_ctl MOD %.2f us\n",(t1-t0)/n*1e6);
  struct stat st; int fd=open("/etc/hostname",0);
  t0=now(); for(int i=0;i<n;i++) syscall(SYS_fstat,fd,&st); t1=now();
  printf("fstat %.2f us\n",(t1-t0)/n*1e6);
  char *buf=aligned_alloc(4096,131072); memset(buf,1,131072);
  t0=now(); for(int i=0;i<2000;i++) memcpy(buf+ (i&1)*65536, buf + (1-(i&1))*65536, 65536); t1=now();
  printf("memcpy 64K %.2f us (%.2f GB/s)\n",(t1-t0)/2000*1e6, 65536.0*2000/(t1-t0)/1e9);
  return 0;
}
