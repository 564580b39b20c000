// microbench: RP small pieces: copy (preadv+send) vs pipe splice vs sendfile per piece; READ copy vs sendfile
#define _GNU_SOURCE
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
#define FLUSH do{while(len){ssize_t n=splice(p[0],NULL,tx,NULL,len,SPLICE_F_MOVE|SPLICE_F_MORE); if(n<=0){perror("splice");exit(1);} len-=n;}}while(0)
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
static void *reader(void *a){int fd=*(int*)a;char *b=aligned_alloc(4096,1<<20);long tot=0;ssize_t n;while((n=recv(fd,b,1<<20,0))>0)tot+=n;fprintf(stderr,"  recv %ld\n",tot);return NULL;}
static void pair(int *tx,int *rx){struct sockaddr_in a={.sin_family=AF_INET,.sin_addr.s_addr=htonl(INADDR_LOOPBACK)};socklen_t l=sizeof a;int s=socket(AF_INET,SOCK_STREAM,0),one=1;bind(s,(void*)&a,l);getsockname(s,(void*)&a,&l);listen(s,1);*rx=socket(AF_INET,SOCK_STREAM,0);connect(*rx,(void*)&a,l);*tx=accept(s,0,0);setsockopt(*tx,IPPROTO_TCP,TCP_NODELAY,&one,4);close(s);}
int main(int argc,char**argv){
 const char *path=argv[1]; int mode=atoi(argv[2]); long piece=argc>3?atol(argv[3]):4096; // data piece = hole piece = piece
 int fd=open(path,O_RDONLY); off_t size=lseek(fd,0,SEEK_END);
 int tx,rx; pair(&tx,&rx); pthread_t th; pthread_create(&th,0,reader,&rx);
 char *buf=aligned_alloc(4096,(1<<20)+65536); char *scratch=aligned_alloc(4096,1<<20); char hdr[64]; memset(hdr,1,64);
 int p[2]; pipe(p); if(fcntl(p[1],F_SETPIPE_SZ,1<<20)<0)perror("setpipe");
 double t0=now(); const long R=1<<20;
 for(off_t o=0;o<size;o+=R){
  if(mode==0){ // READ copy: pread 1MiB + send
   pread(fd,buf,R,o); send(tx,buf,R,0);
  } else if(mode==1){ // READ sendfile
   send(tx,hdr,40,MSG_MORE); off_t x=o; sendfile(tx,fd,&x,R);
  } else if(mode==2){ // RP copy: preadv each data piece into buf after a 20-byte hdr
   size_t len=0; for(off_t d=o; d<o+R; d+=2*piece){ memcpy(buf+len,hdr,20); len+=20; pread(fd,buf+len,piece,d); len+=piece; }
   send(tx,buf,len,0);
  } else if(mode==3){ // RP pipe: write hdr + splice piece per piece, then splice pipe->sock
   size_t len=0; for(off_t d=o; d<o+R; d+=2*piece){ write(p[1],hdr,20); loff_t x=d; splice(fd,&x,p[1],NULL,piece,SPLICE_F_MOVE); len+=20+piece; if(len>=100*(20+piece)) FLUSH; }
   while(len){ssize_t n=splice(p[0],NULL,tx,NULL,len,SPLICE_F_MOVE|SPLICE_F_MORE); if(n<=0){perror("splice");exit(1);} len-=n;}
  } else if(mode==4){ // RP sendfile per piece
   for(off_t d=o; d<o+R; d+=2*piece){ send(tx,hdr,20,MSG_MORE); off_t x=d; sendfile(tx,fd,&x,piece);} 
  } else if(mode==5){ // RP pipe with vmsplice of hdrs from a hdr array
   static char hdrs[1<<16]; size_t len=0; int k=0; for(off_t d=o; d<o+R; d+=2*piece,k++){ struct iovec v={hdrs+k*64,20}; vmsplice(p[1],&v,1,0); loff_t x=d; splice(fd,&x,p[1],NULL,piece,SPLICE_F_MOVE); len+=20+piece; if(len>=100*(20+piece)) FLUSH; }
   while(len){ssize_t n=splice(p[0],NULL,tx,NULL,len,SPLICE_F_MOVE|SPLICE_F_MORE); if(n<=0){perror("splice");exit(1);} len-=n;}
  }
 }
 shutdown(tx,SHUT_WR); pthread_join(th,0); double t=now()-t0;
 printf("mode %d piece %ld: %.4f s\n",mode,piece,t); return 0;}
