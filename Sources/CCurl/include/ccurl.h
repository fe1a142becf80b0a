#ifndef BATCHDL_CCURL_H
#define BATCHDL_CCURL_H

/* Typed wrappers over libcurl for Swift.
 *
 * curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic and cannot be called from
 * Swift; every wrapper here fixes the type of the third argument. Targets libcurl 7.88 (Debian 12):
 * nothing newer is used. */

#include <curl/curl.h>

/* Callback signatures, named so that Swift sees them as @convention(c) types. */
typedef size_t (*ccurl_data_callback)(char *buffer, size_t size, size_t count, void *context);
typedef int (*ccurl_xferinfo_callback)(void *context, curl_off_t dltotal, curl_off_t dlnow,
                                       curl_off_t ultotal, curl_off_t ulnow);
typedef int (*ccurl_seek_callback)(void *context, curl_off_t offset, int origin);
typedef int (*ccurl_sockopt_callback)(void *context, curl_socket_t fd, curlsocktype purpose);
typedef int (*ccurl_debug_callback)(CURL *handle, curl_infotype type, char *data, size_t size,
                                    void *context);

/* Global setup. */
CURLcode ccurl_global_init(void);
/* The libcurl version number, e.g. "7.88.1". */
const char *ccurl_version(void);

/* curl_easy_setopt, one function per argument type. */
CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode ccurl_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value);
CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
CURLcode ccurl_easy_setopt_mime(CURL *handle, curl_mime *value);
/* Restricts a transfer, and the redirects it follows, to http and https. */
CURLcode ccurl_easy_allow_http_only(CURL *handle);
CURLcode ccurl_easy_setopt_data_callback(CURL *handle, CURLoption option,
                                         ccurl_data_callback value);
CURLcode ccurl_easy_setopt_xferinfo_callback(CURL *handle, ccurl_xferinfo_callback value);
CURLcode ccurl_easy_setopt_seek_callback(CURL *handle, ccurl_seek_callback value);
CURLcode ccurl_easy_setopt_sockopt_callback(CURL *handle, ccurl_sockopt_callback value);
CURLcode ccurl_easy_setopt_debug_callback(CURL *handle, ccurl_debug_callback value);

/* curl_easy_getinfo, one function per result type. */
CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode ccurl_easy_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value);
CURLcode ccurl_easy_getinfo_double(CURL *handle, CURLINFO info, double *value);
CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, const char **value);
CURLcode ccurl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value);
CURLcode ccurl_easy_getinfo_slist(CURL *handle, CURLINFO info, struct curl_slist **value);

/* curl_multi_setopt. */
CURLMcode ccurl_multi_setopt_long(CURLM *multi, CURLMoption option, long value);
CURLMcode ccurl_multi_setopt_pointer(CURLM *multi, CURLMoption option, void *value);

/* curl_share_setopt. */
CURLSHcode ccurl_share_setopt_long(CURLSH *share, CURLSHoption option, long value);

/* CURLMsg accessors (the message holds a union that Swift cannot read by name). */
int ccurl_msg_is_done(const CURLMsg *message);
CURL *ccurl_msg_easy(const CURLMsg *message);
CURLcode ccurl_msg_result(const CURLMsg *message);

/* Values of function-like or shifted macros, which Swift does not import. */
extern const unsigned int ccurl_u_default_port;
extern const unsigned int ccurl_u_no_default_port;
extern const unsigned int ccurl_u_default_scheme;
extern const unsigned int ccurl_u_non_support_scheme;
extern const unsigned int ccurl_u_path_as_is;
extern const unsigned int ccurl_u_disallow_user;
extern const unsigned int ccurl_u_urldecode;
extern const unsigned int ccurl_u_urlencode;
extern const unsigned int ccurl_u_appendquery;
extern const long ccurl_http_version_2tls;
extern const long ccurl_http_version_1_1;
extern const long ccurl_http_version_2;
extern const long ccurl_http_version_2_prior_knowledge;
extern const long ccurl_sslversion_tls1_2;
extern const long ccurl_sslversion_tls1_3;
extern const long ccurl_readfunc_abort;
extern const long ccurl_readfunc_pause;
extern const long ccurl_writefunc_pause;
extern const int ccurl_seekfunc_ok;
extern const int ccurl_seekfunc_fail;
extern const int ccurl_seekfunc_cantseek;
extern const long ccurl_pause_all;
extern const long ccurl_pause_cont;
extern const long ccurl_netrc_ignored;
extern const long ccurl_auth_basic;
extern const long ccurl_auth_digest;
extern const long ccurl_auth_any;
extern const curl_socket_t ccurl_socket_bad;

#endif
