#include "cearlysignals.h"

#include <signal.h>
#include <string.h>

/* `batchdl run` and `batchdl worker` stop in order on SIGINT and SIGTERM (exit 3, the report
 * written), from their first moment: a signal that arrives while the process starts must not kill
 * it. Between the dynamic loader and the Swift code that installs the handlers (the libraries'
 * initializers, the Swift runtime, the parsing of the command line: some 10 to 20 ms), the two
 * are blocked here, so that a signal then waits, pending, until the handlers are installed and
 * unblock it (Interrupts.install). A function of the executable's .preinit_array runs before every
 * shared library's initializer, the earliest code a program can run. Other commands keep the
 * default: a signal ends them at once. */

static int blocked = 0;

static void block_early(int argc, char **argv, char **envp) {
  (void)envp;
  if (argc < 2 || argv == 0 || argv[1] == 0) return;
  if (strcmp(argv[1], "run") != 0 && strcmp(argv[1], "worker") != 0) return;
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  if (sigprocmask(SIG_BLOCK, &signals, 0) == 0) blocked = 1;
}

__attribute__((used, section(".preinit_array"))) static void (*const block_early_entry)(int, char **, char **) =
  block_early;

int cearlysignals_blocked(void) { return blocked; }
