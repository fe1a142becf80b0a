#ifndef BATCHDL_CEARLYSIGNALS_H
#define BATCHDL_CEARLYSIGNALS_H

/* Whether SIGINT and SIGTERM were blocked before the program's libraries started (1), because the
 * command is `run` or `worker`; 0 otherwise. See early_signals.c. */
int cearlysignals_blocked(void);

#endif
