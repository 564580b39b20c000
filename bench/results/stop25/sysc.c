#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static pthread_mutex_t m=PTHREAD_MUTEX_INITIALIZER; static pthread_cond_t c=PTHREAD_COND_INITIALIZER; static int turn;
static void *pp(void*a){(void)a;for(int i=0;i<2000;i++){pthread_mutex_lock(&m);while(turn!=1)pthread_cond_wait(&c,&m);turn=0;pthread_cond_signal(&c);pthread_mutex_unlock(&m);}return 0;}
static int sv[2];
static void *echo(void*a){(void)a;char b[256];for(int i=0;i<2000;i++){if(read(sv[1],b,100)<=0)break;write(sv[1],b,100);}return 0;}
int main(void){
 int N=20000; double t=now(); for(int i=0;i<N;i++) getppid(); printf("getppid %.2f us\n",(now()-t)/N*1e6);
 int fd=open("/proc/self/exe",O_RDONLY); struct stat st; t=now(); for(int i=0;i<N;i++) fstat(fd,&st); printf("fstat %.2f us\n",(now()-t)/N*1e6);
 char *buf=aligned_alloc(4096,131072); t=now(); for(int i=0;i<2000;i++) pread(fd,buf,4096,0); printf("pread4k %.2f us\n",(now()-t)/2000*1e6);
 t=now(); for(int i=0;i<500;i++) pread(fd,buf,131072,0); printf("pread128k %.2f us (size %ld)\n",(now()-t)/500*1e6,(long)st.st_size);
 int ep=epoll_create1(0), ev=eventfd(1,0); struct epoll_event e={.events=EPOLLIN}; epoll_ctl(ep,EPOLL_CTL_ADD,ev,&e);
 t=now(); for(int i=0;i<N;i++) epoll_wait(ep,&e,1,0); printf("epoll_wait(ready) %.2f us\n",(now()-t)/N*1e6);
 t=now(); for(int i=0;i<N;i++){struct epoll_event e2={.events=EPOLLIN|EPOLLONESHOT}; epoll_ctl(ep,EPOLL_CTL_MOD,ev,&e2);} printf("epoll_ctl MOD %.2f us\n",(now()-t)/N*1e6);
 pthread_t th; pthread_create(&th,0,pp,0); t=now(); for(int i=0;i<2000;i++){pthread_mutex_lock(&m);turn=1;pthread_cond_signal(&c);while(turn!=0)pthread_cond_wait(&c,&m);pthread_mutex_unlock(&m);} printf("condvar roundtrip %.2f us\n",(now()-t)/2000*1e6); pthread_join(th,0);
 socketpair(AF_UNIX,SOCK_STREAM,0,sv); pthread_create(&th,0,echo,0); t=now(); for(int i=0;i<2000;i++){write(sv[0],buf,100);read(sv[0],buf,100);} printf("unix echo roundtrip %.2f us\n",(now()-t)/2000*1e6); pthread_join(th,0);
 return 0;}
