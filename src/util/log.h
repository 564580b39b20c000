/* Logging to stderr (and so to the journal under systemd). One line per
 * event, with a level tag; errors about a client name its address, the
 * operation and the file handle. */
#ifndef SNFS_LOG_H
#define SNFS_LOG_H

enum log_level { LOG_ERR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

/* Messages above this level are dropped; -v raises it. */
void log_set_level(int level);
int log_get_level(void);
void log_msg(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
