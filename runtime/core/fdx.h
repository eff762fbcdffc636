/* fdx.h: handing file descriptors between the ranks of one machine.  The fds are opaque here
 * (the caller's are POSIX-fd handles of GPU memory, but this module moves plain fds). */
#ifndef WEFT_FDX_H
#define WEFT_FDX_H

#include <stddef.h>

#include "weft.h"

typedef enum { FDX_AUTO = 0, FDX_PIDFD, FDX_SOCKET } fdx_method;

/* Collective over the node of world w (its ranks on this machine: weft_world_local_rank and
 * local_size).  Every rank passes its own fd `mine`; on return
 * fds[i] (fds holds one int per local rank) is an fd of THIS process, close-on-exec, for the
 * same open file as local rank i's `mine`; fds[my rank] is a dup of mine.  The caller closes
 * every fds[i].
 *
 * FDX_PIDFD: pidfd_open + pidfd_getfd (Linux >= 5.6; needs ptrace permission over the peers).
 * FDX_SOCKET: SCM_RIGHTS over Unix datagram sockets in the abstract namespace.
 * FDX_AUTO: pidfd, and if it fails on ANY rank, every rank switches to the socket path.  Under
 * FDX_AUTO only, WEFT_FD_EXCHANGE=pidfd|socket in the environment forces one path.  Every rank
 * must ask for the same method.  *used (may be NULL) says which path ran.
 *
 * Returns 0 on every rank, or -1 on every rank (never a mix, never a hang) with every fds[i] = -1,
 * no fd leaked, and in err the message of the first failing rank: it names that rank, the peer
 * and the errno text.  On success err is empty, unless FDX_AUTO fell back to the socket path:
 * then it says why pidfd was passed over (for a log line). */
int fdx_allgather(weft_world *w, int mine, int *fds, fdx_method method, fdx_method *used, char *err,
                  size_t errlen);

/* "auto", "pidfd", "socket" */
const char *fdx_method_name(fdx_method m);

#endif
