#define _GNU_SOURCE
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(int argc,char**argv){
  int fd=open(argv[1],O_RDONLY); int piece=atoi(argv[2]); const char*m=argv[3];
  uint8_t*buf=aligned_alloc(4096,2<<20); struct io_uring ring; io_uring_queue_init(256,&ring,0);
  /* ST: extra bytes between pieces in buf, SK: offset of the first (both 0: page-aligned) */
  size_t st=getenv("ST")?(size_t)atoi(getenv("ST")):0, sk=getenv("SK")?(size_t)atoi(getenv("SK")):0;
  double t0=now(); size_t tot=0;
  for(off_t off=0;off<(1<<30);off+=1<<20){
    if(m[0]=='t'){ tot+=pread(fd,buf,1<<20,off); }
    else if(m[0]=='p'){ for(off_t q=off;q<off+(1<<20);q+=2*piece) tot+=pread(fd,buf+(q-off),piece,q); }
    else { int n=0; for(off_t q=off;q<off+(1<<20);q+=2*piece){ struct io_uring_sqe*s=io_uring_get_sqe(&ring); io_uring_prep_read(s,fd,buf+(q-off)+(q-off)/(2*piece)*st+sk,piece,q); n++; }
      io_uring_submit_and_wait(&ring,n); struct io_uring_cqe*c; unsigned h,k=0; io_uring_for_each_cqe(&ring,h,c){tot+=c->res;k++;} io_uring_cq_advance(&ring,k); }
  }
  printf("%s piece %d: %.3f s (%zu bytes)\n",m,piece,now()-t0,tot);
}
