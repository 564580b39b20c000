#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
/* usage: sendab FILE CALLSIZE PIECE MODE ; file: alternating PIECE data / PIECE hole */
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int csock; static size_t callsz, piece; static int calls;
static size_t replylen(void){ size_t n=callsz/(2*piece); return 64 + n*(16+piece) + n*20; }
static void *client(void*a){(void)a; size_t rl=replylen(); char *b=malloc(rl); char req[128]={0};
 for(int i=0;i<calls;i++){ write(csock,req,128); size_t got=0; while(got<rl){ssize_t r=read(csock,b+got,rl-got); if(r<=0){perror("read");exit(1);} got+=r;} }
 return 0;}
int main(int argc,char**argv){
 const char *path=argv[1]; callsz=strtoul(argv[2],0,0); piece=strtoul(argv[3],0,0); int mode=atoi(argv[4]);
 int fd=open(path,O_RDONLY); struct stat st; fstat(fd,&st); calls=st.st_size/callsz; if(argc>5) calls=atoi(argv[5]);
 char *map=mmap(0,st.st_size,PROT_READ,MAP_SHARED,fd,0);
 int l=socket(AF_INET,SOCK_STREAM,0); struct sockaddr_in a={.sin_family=AF_INET,.sin_addr.s_addr=htonl(0x7f000001)}; int one=1;
 setsockopt(l,SOL_SOCKET,SO_REUSEADDR,&one,4); bind(l,(void*)&a,sizeof a); socklen_t al=sizeof a; getsockname(l,(void*)&a,&al); listen(l,1);
 csock=socket(AF_INET,SOCK_STREAM,0); connect(csock,(void*)&a,sizeof a); int s=accept(l,0,0); setsockopt(s,IPPROTO_TCP,TCP_NODELAY,&one,4);
 pthread_t th; pthread_create(&th,0,client,0);
 size_t rl=replylen(); char *buf=aligned_alloc(4096,(rl+4095)&~4095UL); memset(buf,1,rl); char req[128];
 struct iovec *iov=calloc(4096,sizeof *iov);
 double t0=now();
 for(int i=0;i<calls;i++){ size_t got=0; while(got<128){ssize_t r=read(s,req+got,128-got); if(r<=0) exit(2); got+=r;}
  off_t base=(off_t)((i*callsz)%st.st_size); size_t n=callsz/(2*piece);
  if(mode==0){ /* copy: pread pieces into buffer, one send */
   size_t p=64; for(size_t k=0;k<n;k++){ p+=16; pread(fd,buf+p,piece,base+2*k*piece); p+=piece+20;} send(s,buf,rl,0);
  } else if(mode==1){ /* sendfile per piece, corked */
   int on=1; setsockopt(s,IPPROTO_TCP,TCP_CORK,&on,4); size_t p=0; send(s,buf,64+16,MSG_MORE);
   for(size_t k=0;k<n;k++){ off_t o=base+2*k*piece; sendfile(s,fd,&o,piece); send(s,buf,k+1<n?36:20,MSG_MORE);} (void)p;
   on=0; setsockopt(s,IPPROTO_TCP,TCP_CORK,&on,4);
  } else if(mode==2){ /* one sendmsg, data from mmap */
   int c=0; iov[c++]=(struct iovec){buf,64+16}; for(size_t k=0;k<n;k++){ iov[c++]=(struct iovec){map+base+2*k*piece,piece}; iov[c++]=(struct iovec){buf,k+1<n?36:20}; }
   struct msghdr m={.msg_iov=iov,.msg_iovlen=c}; size_t left=rl; while(left){ ssize_t r=sendmsg(s,&m,0); if(r<0){perror("sendmsg");exit(3);} left-=r; if(!left)break; while(r>0){ if((size_t)r>=m.msg_iov->iov_len){r-=m.msg_iov->iov_len;m.msg_iov++;m.msg_iovlen--;} else {m.msg_iov->iov_base=(char*)m.msg_iov->iov_base+r;m.msg_iov->iov_len-=r;r=0;} } }
  } else if(mode==3){ /* full-range sendfile (holes as zeros): knfsd-like, more bytes */
   int on=1; setsockopt(s,IPPROTO_TCP,TCP_CORK,&on,4); send(s,buf,64+16,MSG_MORE); off_t o=base; size_t left=rl-80;
   while(left){ ssize_t r=sendfile(s,fd,&o,left>callsz?callsz:left); if(r<=0){ r=send(s,buf,left>4096?4096:left,MSG_MORE);} left-=r; }
   on=0; setsockopt(s,IPPROTO_TCP,TCP_CORK,&on,4);
  }
 }
 pthread_join(th,0); double t=now()-t0;
 printf("mode %d call %zu piece %zu: %d calls %.3f s, %.1f us/call\n",mode,callsz,piece,calls,t,t/calls*1e6);
 return 0;}
