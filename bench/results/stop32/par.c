#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
#define SZ (256u<<20)
static char *src[2],*dst[2];
static void *cp(void*x){long i=(long)x; for(int r=0;r<4;r++) for(size_t o=0;o<SZ;o+=1<<20) memcpy(dst[i]+(o&((4<<20)-1)),src[i]+o,1<<20); return 0;}
int main(){for(int i=0;i<2;i++){src[i]=malloc(SZ);dst[i]=malloc(4<<20);memset(src[i],1,SZ);memset(dst[i],0,4<<20);}
 double t0=now(); cp(0); double t1=now(); pthread_t a,b; pthread_create(&a,0,cp,(void*)0); pthread_create(&b,0,cp,(void*)1); pthread_join(a,0); pthread_join(b,0); double t2=now();
 printf("one thread: %.2f GB/s; two threads: %.2f GB/s total\n", 4.0*SZ/(t1-t0)/1e9, 8.0*SZ/(t2-t1)/1e9);}
