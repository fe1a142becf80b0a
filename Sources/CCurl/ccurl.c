#include "ccurl.h"

CURLcode ccurl_global_init(void) { return curl_global_init(CURL_GLOBAL_ALL); }

const char *ccurl_version(void) { return curl_version_info(CURLVERSION_NOW)->version; }

CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
  return curl_easy_setopt(handle, option, value);
}

CURLcode ccurl_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
  return curl_easy_setopt(handle, option, value);
}

CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
  return curl_easy_setopt(handle, option, value);
}

CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
  return curl_easy_setopt(handle, option, value);
}

CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
  return curl_easy_setopt(handle, option, value);
}

CURLcode ccurl_easy_setopt_mime(CURL *handle, curl_mime *value) {
  return curl_easy_setopt(handle, CURLOPT_MIMEPOST, value);
}

CURLcode ccurl_easy_setopt_data_callback(CURL *handle, CURLoption option,
                                         ccurl_data_callback value) {
  return curl_easy_setopt(handle, option, value);
}

CURLcode ccurl_easy_setopt_xferinfo_callback(CURL *handle, ccurl_xferinfo_callback value) {
  return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, value);
}

CURLcode ccurl_easy_setopt_seek_callback(CURL *handle, ccurl_seek_callback value) {
  return curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, value);
}

CURLcode ccurl_easy_setopt_sockopt_callback(CURL *handle, ccurl_sockopt_callback value) {
  return curl_easy_setopt(handle, CURLOPT_SOCKOPTFUNCTION, value);
}

CURLcode ccurl_easy_setopt_debug_callback(CURL *handle, ccurl_debug_callback value) {
  return curl_easy_setopt(handle, CURLOPT_DEBUGFUNCTION, value);
}

CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
  return curl_easy_getinfo(handle, info, value);
}

CURLcode ccurl_easy_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value) {
  return curl_easy_getinfo(handle, info, value);
}

CURLcode ccurl_easy_getinfo_double(CURL *handle, CURLINFO info, double *value) {
  return curl_easy_getinfo(handle, info, value);
}

CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, const char **value) {
  return curl_easy_getinfo(handle, info, value);
}

CURLcode ccurl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
  return curl_easy_getinfo(handle, info, value);
}

CURLcode ccurl_easy_getinfo_slist(CURL *handle, CURLINFO info, struct curl_slist **value) {
  return curl_easy_getinfo(handle, info, value);
}

CURLMcode ccurl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
  return curl_multi_setopt(multi, option, value);
}

CURLMcode ccurl_multi_setopt_pointer(CURLM *multi, CURLMoption option, void *value) {
  return curl_multi_setopt(multi, option, value);
}

CURLSHcode ccurl_share_setopt_long(CURLSH *share, CURLSHoption option, long value) {
  return curl_share_setopt(share, option, value);
}

int ccurl_msg_is_done(const CURLMsg *message) { return message->msg == CURLMSG_DONE; }

CURL *ccurl_msg_easy(const CURLMsg *message) { return message->easy_handle; }

CURLcode ccurl_msg_result(const CURLMsg *message) { return message->data.result; }

const unsigned int ccurl_u_default_port = CURLU_DEFAULT_PORT;
const unsigned int ccurl_u_no_default_port = CURLU_NO_DEFAULT_PORT;
const unsigned int ccurl_u_default_scheme = CURLU_DEFAULT_SCHEME;
const unsigned int ccurl_u_non_support_scheme = CURLU_NON_SUPPORT_SCHEME;
const unsigned int ccurl_u_path_as_is = CURLU_PATH_AS_IS;
const unsigned int ccurl_u_disallow_user = CURLU_DISALLOW_USER;
const unsigned int ccurl_u_urldecode = CURLU_URLDECODE;
const unsigned int ccurl_u_urlencode = CURLU_URLENCODE;
const unsigned int ccurl_u_appendquery = CURLU_APPENDQUERY;
const long ccurl_http_version_2tls = CURL_HTTP_VERSION_2TLS;
const long ccurl_http_version_1_1 = CURL_HTTP_VERSION_1_1;
const long ccurl_http_version_2 = CURL_HTTP_VERSION_2_0;
const long ccurl_http_version_2_prior_knowledge = CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE;
const long ccurl_sslversion_tls1_2 = CURL_SSLVERSION_TLSv1_2;
const long ccurl_sslversion_tls1_3 = CURL_SSLVERSION_TLSv1_3;
const long ccurl_readfunc_abort = CURL_READFUNC_ABORT;
const long ccurl_readfunc_pause = CURL_READFUNC_PAUSE;
const long ccurl_writefunc_pause = CURL_WRITEFUNC_PAUSE;
const int ccurl_seekfunc_ok = CURL_SEEKFUNC_OK;
const int ccurl_seekfunc_fail = CURL_SEEKFUNC_FAIL;
const int ccurl_seekfunc_cantseek = CURL_SEEKFUNC_CANTSEEK;
const long ccurl_pause_all = CURLPAUSE_ALL;
const long ccurl_pause_cont = CURLPAUSE_CONT;
const long ccurl_netrc_ignored = CURL_NETRC_IGNORED;
const long ccurl_auth_basic = (long)CURLAUTH_BASIC;
const long ccurl_auth_digest = (long)CURLAUTH_DIGEST;
/* The safest scheme the server offers: libcurl asks once without credentials to learn which. */
const long ccurl_auth_any = (long)CURLAUTH_ANY;
const curl_socket_t ccurl_socket_bad = CURL_SOCKET_BAD;

/* The bit-mask forms of the protocol options are deprecated in favour of the _STR ones, which
 * libcurl parses each time they are set, on every transfer of a reset handle: setting up a
 * transfer cost about 2,200 instructions more with them (bench/callgrind). libcurl keeps the bit
 * masks; they take the same effect and parse nothing. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
CURLcode ccurl_easy_allow_http_only(CURL *handle) {
  CURLcode code = curl_easy_setopt(handle, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
  if (code != CURLE_OK) return code;
  return curl_easy_setopt(handle, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
}
#pragma GCC diagnostic pop
