// hiredis (Debian 12: 0.14.1), the cluster's Redis client. redisCommand is variadic and its
// format string would read the room names; Tessera sends every command with redisCommandArgv
// (binary-safe lengths) instead. The reply types are macros, given here as functions.
#ifndef TESSERA_CHIREDIS_SHIM_H
#define TESSERA_CHIREDIS_SHIM_H
#include <stddef.h>
#include <sys/time.h>
#include <hiredis/hiredis.h>

static inline int tessera_redis_reply_string(void) { return REDIS_REPLY_STRING; }
static inline int tessera_redis_reply_array(void) { return REDIS_REPLY_ARRAY; }
static inline int tessera_redis_reply_integer(void) { return REDIS_REPLY_INTEGER; }
static inline int tessera_redis_reply_nil(void) { return REDIS_REPLY_NIL; }
static inline int tessera_redis_reply_status(void) { return REDIS_REPLY_STATUS; }
static inline int tessera_redis_reply_error(void) { return REDIS_REPLY_ERROR; }
static inline int tessera_redis_ok(void) { return REDIS_OK; }

/// The error hiredis recorded on a context, or on a reader; "" when none.
static inline const char *tessera_redis_context_error(const redisContext *c) { return c->err ? c->errstr : ""; }
static inline int tessera_redis_context_failed(const redisContext *c) { return c->err != 0; }
static inline const char *tessera_redis_reader_error(const redisReader *r) { return r->err ? r->errstr : ""; }
static inline int tessera_redis_reader_failed(const redisReader *r) { return r->err != 0; }
#endif
