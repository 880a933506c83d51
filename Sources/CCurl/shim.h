// libcurl for Swift. curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are
// C-variadic, which Swift cannot call: each use gets a typed wrapper here.
#ifndef LARDER_CCURL_SHIM_H
#define LARDER_CCURL_SHIM_H

#include <curl/curl.h>

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
