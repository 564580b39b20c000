/* The control thread of a running snfsd: a unix socket in the state
 * directory (STATE_DIR/control.sock, mode 0600) that answers `snfsd
 * --stats`, and an optional Prometheus text endpoint on 127.0.0.1.
 *
 * Control protocol: the client sends one command line, "stats" (a table
 * for people) or "metrics" (Prometheus text), and reads the answer until
 * the server closes the connection. */
#ifndef SNFS_CONTROL_H
#define SNFS_CONTROL_H

#include <stdint.h>
#include <stdio.h>

struct snfsd;
struct control;

#define CONTROL_SOCKET "control.sock"

/* Start the control thread for s: the socket in s->cfg.state_dir and,
 * when s->cfg.metrics_port is not 0, HTTP on 127.0.0.1 at that port.
 * Call once every program is registered (the statistics table is then
 * fixed). A control socket that cannot be made is only logged (the server
 * serves without it); a metrics port that cannot be bound is an error.
 * Returns 0 or -errno. */
int control_start(struct snfsd *s, struct control **out);
/* Stop the thread, close the sockets and remove the socket file. */
void control_stop(struct control *c);
/* The TCP port the metrics endpoint listens on, 0 when there is none. */
uint16_t control_metrics_port(const struct control *c);

/* Write the answer to a control command ("stats" or "metrics") for s into
 * f. Returns 0, or -EINVAL for an unknown command, -ENOMEM. */
int control_render(const struct snfsd *s, const char *cmd, FILE *f);

/* `snfsd --stats`: ask the server whose state directory is state_dir for
 * cmd and copy the answer to out. Returns a process exit status (0, or 1
 * after a message on stderr). */
int control_client(const char *state_dir, const char *cmd, FILE *out);

#endif
