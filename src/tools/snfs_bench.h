/* `snfs bench`: sysbench fileio's random read/write mix over libsnfs. */
#ifndef SNFS_TOOLS_SNFS_BENCH_H
#define SNFS_TOOLS_SNFS_BENCH_H

/* argv[0] is "bench". Returns the exit status. */
int snfs_cmd_bench(int argc, char **argv);
/* Lines for `snfs --help`. */
extern const char snfs_bench_help[];

#endif
