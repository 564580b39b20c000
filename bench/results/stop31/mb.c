#define _GNU_SOURCE
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>
#define FSZ (64u<<20)
#define REP (1u<<20)
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
static void wall(int fd,const void*p,size_t n){const char*c=p;while(n){ssize_t r=write(fd,c,n);if(r<0){perror("w");exit(1);}c+=r;n-=r;}}
static int piece=4096;
int main(int argc,char**argv){
  const char*mode=argv[1]; const char*path=argv[2]; int loops=atoi(argv[3]); if(argc>4)piece=atoi(argv[4]);
  int fd=open(path,O_RDONLY); uint8_t*map=mmap(NULL,FSZ,PROT_READ,MAP_SHARED,fd,0);
  volatile uint8_t s=0; for(size_t i=0;i<FSZ;i+=4096)s+=map[i];
  int ls=socket(AF_INET,SOCK_STREAM,0); struct sockaddr_in a={.sin_family=AF_INET,.sin_addr.s_addr=htonl(0x7f000001)};
  int one=1; setsockopt(ls,SOL_SOCKET,SO_REUSEADDR,&one,4);
  bind(ls,(void*)&a,sizeof a); listen(ls,1); socklen_t al=sizeof a; getsockname(ls,(void*)&a,&al);
  int rd=!strcmp(mode,"read");
  uint64_t perrep = rd? REP : (REP/2 + (REP/piece/2)*(16+20));
  uint64_t total=(uint64_t)loops*(FSZ/REP)*perrep;
  pid_t pid=fork();
  if(pid==0){
    int c=socket(AF_INET,SOCK_STREAM,0); connect(c,(void*)&a,sizeof a); setsockopt(c,IPPROTO_TCP,TCP_NODELAY,&one,4);
    int p[2]; pipe(p); fcntl(p[1],F_SETPIPE_SZ,1<<20);
    uint8_t hdr[64]={0};
    struct iovec *iov=malloc(sizeof(*iov)*1100);
    for(int l=0;l<loops;l++) for(uint64_t off=0;off<FSZ;off+=REP){
      if(rd){ send(c,hdr,0,0); off_t o=off; size_t left=REP; while(left){ssize_t r=sendfile(c,fd,&o,left); if(r<=0){perror("sf");exit(1);} left-=r;} continue; }
      if(!strcmp(mode,"sf")){
        int on=1; setsockopt(c,IPPROTO_TCP,TCP_CORK,&on,4);
        for(uint64_t q=off;q<off+REP;q+=2*piece){ send(c,hdr,q==off?16:36,MSG_MORE); off_t o=q; size_t left=piece; while(left){ssize_t r=sendfile(c,fd,&o,left); if(r<=0){perror("sf");exit(1);} left-=r;} }
        send(c,hdr,20,MSG_MORE);
        on=0; setsockopt(c,IPPROTO_TCP,TCP_CORK,&on,4);
        continue;
      }
      int n=0;
      uint8_t *hb = hdr; size_t hsz=0;
      if(!strcmp(mode,"vms")){ hb=mmap(NULL,8192,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); memset(hb,1,8192);} 
      for(uint64_t q=off;q<off+REP;q+=2*piece){ iov[n].iov_base=hb+(hsz%4096); iov[n++].iov_len=q==off?16:36; hsz+=64; iov[n].iov_base=map+q; iov[n++].iov_len=piece; }
      iov[n].iov_base=hb; iov[n++].iov_len=20;
      if(!strcmp(mode,"map")){
        int i=0; while(i<n){ int m=n-i>1024?1024:n-i; struct msghdr mh={.msg_iov=iov+i,.msg_iovlen=m}; ssize_t r=sendmsg(c,&mh,0); if(r<0){perror("sm");exit(1);}
          while(r>0){ if((size_t)r>=iov[i].iov_len){r-=iov[i].iov_len;i++;} else {iov[i].iov_base=(char*)iov[i].iov_base+r; iov[i].iov_len-=r; r=0;} } }
      } else {
        int i=0; size_t inpipe=0;
        while(i<n){ int m=n-i>1024?1024:n-i; ssize_t r=vmsplice(p[1],iov+i,m,SPLICE_F_NONBLOCK);
          if(r<0 && errno!=EAGAIN){perror("vms");exit(1);} if(r<0)r=0; inpipe+=r;
          while(r>0){ if((size_t)r>=iov[i].iov_len){r-=iov[i].iov_len;i++;} else {iov[i].iov_base=(char*)iov[i].iov_base+r; iov[i].iov_len-=r; r=0;} }
          while(inpipe){ ssize_t w=splice(p[0],NULL,c,NULL,inpipe,SPLICE_F_MORE*(i<n)); if(w<=0){perror("spl");exit(1);} inpipe-=w; }
        }
        munmap(hb,8192);
      }
    }
    struct rusage ru; getrusage(RUSAGE_SELF,&ru);
    fprintf(stderr,"sender cpu %.3f (u %.3f s %.3f)\n",ru.ru_utime.tv_sec+ru.ru_utime.tv_usec/1e6+ru.ru_stime.tv_sec+ru.ru_stime.tv_usec/1e6,ru.ru_utime.tv_sec+ru.ru_utime.tv_usec/1e6,ru.ru_stime.tv_sec+ru.ru_stime.tv_usec/1e6);
    close(c); _exit(0);
  }
  int c=accept(ls,NULL,NULL); uint8_t*buf=aligned_alloc(4096,1<<20); uint64_t got=0; double t0=now();
  while(got<total){ssize_t r=recv(c,buf,1<<20,0); if(r<=0){fprintf(stderr,"recv %zd got %lu of %lu\n",r,got,total);break;} got+=r;}
  double t=now()-t0; waitpid(pid,NULL,0);
  struct rusage ru; getrusage(RUSAGE_SELF,&ru);
  printf("%s piece %d: %.3f s for %lu bytes (%lu MiB logical), recv cpu %.3f\n",mode,piece,t,got,(unsigned long)loops*64,ru.ru_utime.tv_sec+ru.ru_utime.tv_usec/1e6+ru.ru_stime.tv_sec+ru.ru_stime.tv_usec/1e6);
}
