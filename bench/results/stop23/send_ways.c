/* scratch: ways to send a mixed-4d READ_PLUS-like stream (4K data, 4K hole,
 * a 20-byte header per piece) from a cached file to a loopback TCP reader. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int port;
static void *reader(void *a){(void)a;int l=socket(AF_INET,SOCK_STREAM,0),one=1;setsockopt(l,SOL_SOCKET,SO_REUSEADDR,&one,4);
 struct sockaddr_in s={.sin_family=AF_INET,.sin_port=htons(port),.sin_addr.s_addr=htonl(0x7f000001)};
 bind(l,(void*)&s,sizeof s);listen(l,1);int c=accept(l,0,0);static char b[1<<20];while(read(c,b,sizeof b)>0);close(c);close(l);return 0;}
static void wall(int fd,const void*p,size_t n){while(n){ssize_t r=write(fd,p,n);if(r<=0){perror("w");exit(1);}p=(const char*)p+r;n-=r;}}
int main(int argc,char**argv){const char*f=argv[1];int mode=atoi(argv[2]);size_t PC=argc>3?atol(argv[3]):4096;port=23000+mode;
 int fd=open(f,O_RDONLY);off_t size=lseek(fd,0,SEEK_END);static char tmp[1<<20];for(off_t o=0;o<size;o+=sizeof tmp)pread(fd,tmp,sizeof tmp,o);
 pthread_t t;pthread_create(&t,0,reader,0);usleep(200000);
 int s=socket(AF_INET,SOCK_STREAM,0);struct sockaddr_in a={.sin_family=AF_INET,.sin_port=htons(port),.sin_addr.s_addr=htonl(0x7f000001)};
 if(connect(s,(void*)&a,sizeof a)){perror("c");return 1;}
 int p[2];pipe(p);fcntl(p[1],F_SETPIPE_SZ,1<<20);
 static char buf[(1<<20)+65536] __attribute__((aligned(4096)));char hdr[20]={0};
 double t0=now();size_t REPLY=1<<20; /* data bytes per reply */
 for(off_t off=0;off<size;off+=2*REPLY){ /* one reply: REPLY data bytes over 2*REPLY of file */
  off_t end=off+2*(off_t)REPLY;if(end>size)end=size;
  if(mode==0){ /* copy: one preadv over the span, gaps into scratch; headers interleaved; one send */
   struct iovec iov[1024];int n=0;size_t at=0;static char scratch[65536];
   for(off_t o=off;o<end;o+=2*PC){memcpy(buf+at,hdr,20);at+=20;iov[n++]=(struct iovec){buf+at,PC};at+=PC;iov[n++]=(struct iovec){scratch,PC};}
   preadv(fd,iov,n,off);wall(s,buf,at);
  }else if(mode==1){ /* sendfile per piece, header by send MSG_MORE */
   for(off_t o=off;o<end;o+=2*PC){send(s,hdr,20,MSG_MORE);off_t x=o;size_t left=PC;while(left){ssize_t r=sendfile(s,fd,&x,left);if(r<=0){perror("sf");return 1;}left-=r;}}
  }else if(mode==2){ /* pipe: write header, splice piece, then splice pipe to socket */
   size_t inpipe=0;
   for(off_t o=off;o<end;o+=2*PC){wall(p[1],hdr,20);loff_t x=o;size_t left=PC;while(left){ssize_t r=splice(fd,&x,p[1],0,left,SPLICE_F_MORE);if(r<=0){perror("sp");return 1;}left-=r;}inpipe+=20+PC;
    if(inpipe>=(1<<19)||o+2*(off_t)PC>=end){while(inpipe){ssize_t r=splice(p[0],0,s,0,inpipe,SPLICE_F_MORE);if(r<=0){perror("sp2");return 1;}inpipe-=r;}}}
  }
 }
 shutdown(s,SHUT_WR);pthread_join(t,0);double t1=now();printf("mode %d piece %zu: %.3f s\n",mode,PC,t1-t0);return 0;}
