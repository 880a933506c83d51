// libcurl for Swift. curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are
// C-variadic, which Swift cannot call: each use gets a typed wrapper here.
#ifndef LARDER_CCURL_SHIM_H
#define LARDER_CCURL_SHIM_H

#include <curl/curl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

static inline CURLcode larder_easy_setopt_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode larder_easy_setopt_string(CURL *easy, CURLoption option, const char *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode larder_easy_setopt_pointer(CURL *easy, CURLoption option, void *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode larder_easy_setopt_offset(CURL *easy, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode larder_easy_setopt_slist(CURL *easy, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(easy, option, value);
}

typedef size_t (*larder_data_callback)(char *data, size_t size, size_t count, void *context);

static inline CURLcode larder_easy_setopt_callback(CURL *easy, CURLoption option, larder_data_callback value) {
    return curl_easy_setopt(easy, option, value);
}

typedef int (*larder_progress_callback)(void *context, curl_off_t downloadTotal, curl_off_t downloaded,
                                        curl_off_t uploadTotal, curl_off_t uploaded);

/// Turns progress calls on and sets the callback (CURLOPT_XFERINFOFUNCTION).
static inline CURLcode larder_easy_setopt_progress(CURL *easy, larder_progress_callback value) {
    curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
    return curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, value);
}

/// What a write callback returns to pause its transfer (the data is delivered again later).
static inline size_t larder_write_pause(void) { return CURL_WRITEFUNC_PAUSE; }

/// What a read callback returns to pause its transfer until more of the body is there, or to abort it.
static inline size_t larder_read_pause(void) { return CURL_READFUNC_PAUSE; }
static inline size_t larder_read_abort(void) { return CURL_READFUNC_ABORT; }

typedef int (*larder_seek_callback)(void *context, curl_off_t offset, int origin);

/// How curl rewinds a request body it must send again (CURLOPT_SEEKFUNCTION).
static inline CURLcode larder_easy_setopt_seek(CURL *easy, larder_seek_callback value) {
    return curl_easy_setopt(easy, CURLOPT_SEEKFUNCTION, value);
}

/// Lets a paused transfer go on (`curl_easy_pause` with CURLPAUSE_CONT).
static inline CURLcode larder_easy_unpause(CURL *easy) { return curl_easy_pause(easy, CURLPAUSE_CONT); }

static inline CURLcode larder_easy_getinfo_long(CURL *easy, CURLINFO info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}
static inline CURLcode larder_easy_getinfo_pointer(CURL *easy, CURLINFO info, void **value) {
    return curl_easy_getinfo(easy, info, value);
}

typedef int (*larder_prereq_callback)(void *context, char *primaryIP, char *localIP, int primaryPort, int localPort);

/// Called once a connection, new or reused, is chosen, before the request goes on it
/// (CURLOPT_PREREQFUNCTION); non-zero aborts the transfer and closes the connection.
static inline CURLcode larder_easy_setopt_prereq(CURL *easy, larder_prereq_callback value, void *context) {
    curl_easy_setopt(easy, CURLOPT_PREREQDATA, context);
    return curl_easy_setopt(easy, CURLOPT_PREREQFUNCTION, value);
}

typedef int (*larder_close_socket_callback)(void *context, curl_socket_t socket);

/// Who closes the sockets of the connections this handle opens (CURLOPT_CLOSESOCKETFUNCTION).
static inline CURLcode larder_easy_setopt_close_socket(CURL *easy, larder_close_socket_callback value, void *context) {
    curl_easy_setopt(easy, CURLOPT_CLOSESOCKETDATA, context);
    return curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, value);
}

/// The socket of the connection a finished transfer left open; -1 when none was kept.
static inline int larder_easy_kept_socket(CURL *easy) {
    curl_socket_t socket = CURL_SOCKET_BAD;
    if(curl_easy_getinfo(easy, CURLINFO_ACTIVESOCKET, &socket) != CURLE_OK || socket == CURL_SOCKET_BAD) return -1;
    return socket;
}

/// The local port of a socket; 0 when it has none.
static inline int larder_local_port(int socket) {
    struct sockaddr_storage address;
    socklen_t length = sizeof(address);
    if(getsockname(socket, (struct sockaddr *)&address, &length) != 0) return 0;
    return address.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&address)->sin6_port)
                                          : ntohs(((struct sockaddr_in *)&address)->sin_port);
}

/// Whether an idle socket holds bytes nobody asked for, without waiting; it is then shut
/// down, so nothing ever reads them. 1 when it held some.
static inline int larder_end_if_unasked(int socket) {
    char byte;
    if(recv(socket, &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0) return 0;
    shutdown(socket, SHUT_RDWR);
    return 1;
}

static inline CURLMcode larder_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

static inline CURLMcode larder_multi_setopt_pointer(CURLM *multi, CURLMoption option, void *value) {
    return curl_multi_setopt(multi, option, value);
}

// For a multi handle driven by an event loop: curl says which sockets to watch and when to
// call it back (CURLMOPT_SOCKETFUNCTION, CURLMOPT_TIMERFUNCTION).
typedef int (*larder_socket_callback)(CURL *easy, curl_socket_t socket, int what, void *context, void *socketContext);
typedef int (*larder_timer_callback)(CURLM *multi, long milliseconds, void *context);

static inline CURLMcode larder_multi_setopt_socket_callback(CURLM *multi, larder_socket_callback value) {
    return curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, value);
}
static inline CURLMcode larder_multi_setopt_timer_callback(CURLM *multi, larder_timer_callback value) {
    return curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, value);
}

// CURLMsg holds a union; these read it without Swift having to model the union.
static inline int larder_msg_is_done(const CURLMsg *message) { return message->msg == CURLMSG_DONE; }
static inline CURL *larder_msg_easy(const CURLMsg *message) { return message->easy_handle; }
static inline CURLcode larder_msg_result(const CURLMsg *message) { return message->data.result; }

#endif
