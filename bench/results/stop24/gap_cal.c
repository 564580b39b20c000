#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/uio.h>
#include <sys/mman.h>
#include <time.h>
#include <stdint.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static char scratch[65536] __attribute__((aligned(4096)));
int main(int argc,char**argv){
  int N=atoi(argv[2]); size_t P=atoi(argv[3]); size_t G=P; int reps=atoi(argv[4]);
  int fd;
  if(!strcmp(argv[1],"memfd")){fd=memfd_create("c",0); char*b=aligned_alloc(4096,(P+G)*N); memset(b,1,(P+G)*N); pwrite(fd,b,(P+G)*N,0);} else fd=open(argv[1],O_RDONLY);
  char*buf=aligned_alloc(4096,P*N);
  struct iovec iov[2048];
  double tp=1e18,tm=1e18;
  for(int r=0;r<reps;r++){
    double s=now();
    for(int i=0;i<N;i++) preadv2(fd,&(struct iovec){buf+i*P,P},1,i*(P+G),0);
    double e=now(); if(e-s<tp)tp=e-s;
    for(int i=0;i<N;i++){iov[2*i]=(struct iovec){buf+i*P,P};iov[2*i+1]=(struct iovec){scratch,G};}
    s=now(); preadv2(fd,iov,2*N,0,0); e=now(); if(e-s<tm)tm=e-s;
  }
  double a=(tp-tm/2)/(N-0.5); double b=(tm-a)/(2.0*N*P);
  printf("pieces %.1f us merged %.1f us  a=%.0f ns/call b=%.3f ns/B  gap=%.0f B\n",tp/1e3,tm/1e3,a,b,a/b);
}
