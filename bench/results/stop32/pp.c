#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>
#include <time.h>
static int a[2], b[2];
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
static void *th(void *x){ cpu_set_t s; CPU_ZERO(&s); CPU_SET((long)x,&s); pthread_setaffinity_np(pthread_self(),sizeof s,&s); char c; for(;;){ if(read(a[0],&c,1)!=1)break; write(b[1],&c,1);} return 0;}
int main(int argc,char**argv){ long other = argc>1 ? 0 : 1; pipe(a); pipe(b); pthread_t t; pthread_create(&t,0,th,(void*)other);
 cpu_set_t s; CPU_ZERO(&s); CPU_SET(0,&s); sched_setaffinity(0,sizeof s,&s);
 char c='x'; int N=20000; double t0=now(); for(int i=0;i<N;i++){write(a[1],&c,1); read(b[0],&c,1);} double t1=now();
 printf("%s: round trip %.1f us\n", other?"cross-CPU":"same CPU", (t1-t0)/N*1e6); return 0;}
