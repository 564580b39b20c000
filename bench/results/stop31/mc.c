#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(int c,char**v){int fd=open(v[1],O_RDONLY); size_t sz=1ul<<30; char*m=mmap(NULL,sz,PROT_READ,MAP_SHARED|(c>2?MAP_POPULATE:0),fd,0); char*b=aligned_alloc(4096,1<<20);
for(int r=0;r<3;r++){double t=now(); for(size_t o=0;o<sz;o+=1<<20) memcpy(b,m+o,1<<20); printf("mmap copy pass %d: %.3f\n",r,now()-t);}
double t=now(); for(size_t o=0;o<sz;o+=1<<20) pread(fd,b,1<<20,o); printf("pread: %.3f\n",now()-t);}
