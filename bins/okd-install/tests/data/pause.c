/* The sandbox ("pause") process of the node-host tests' pods: holds the
 * pod's namespaces, reaps children it inherits as PID 1, and exits on
 * SIGINT or SIGTERM so a pod stops without waiting for SIGKILL. Built
 * static by bins/okd-install/tests/common/node.rs. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }

static void reap(int sig) {
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void) {
    struct sigaction a = {0};
    a.sa_handler = stop;
    sigaction(SIGINT, &a, NULL);
    sigaction(SIGTERM, &a, NULL);
    a.sa_handler = reap;
    a.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &a, NULL);
    for (;;) {
        pause();
    }
    return 1;
}
