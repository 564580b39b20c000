#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
#define SZ (16u<<20)
int main(void){
  for(int mode=0;mode<3;mode++){
    double best=1e9;
    for(int r=0;r<5;r++){
      double t0=now();
      char*p=mmap(NULL,SZ+(2u<<20),PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
      char*a=(char*)(((unsigned long)p+(2u<<20)-1)&~((2ul<<20)-1));
      if(mode==1) madvise(a,SZ,23/*MADV_POPULATE_WRITE*/);
      if(mode==2) madvise(a,SZ,MADV_HUGEPAGE);
      for(size_t i=0;i<SZ;i+=4096)a[i]=1;
      double t=now()-t0;
      munmap(p,SZ+(2u<<20));
      if(t<best)best=t;
    }
    printf("mode %d (%s): %.2f ms per 16 MiB\n",mode,mode==0?"touch":mode==1?"populate":"thp",best*1e3);
  }
}
