#include "blackhole.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int th_blackhole(int *port, int *filler)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    *filler = -1;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(fd, 0) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0 ||
        (*filler = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
        connect(*filler, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        if (*filler >= 0)
            close(*filler);
        *filler = -1;
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}
