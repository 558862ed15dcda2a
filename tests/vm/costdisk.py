# An nbdkit Python plugin (tests/vm, `nbddisk`): a block device whose cost
# per request is chosen, with a known internal unit and a small, known
# misalignment penalty. Every request sleeps BASE_US microseconds; a write
# (a read) that covers part of a UNIT, i.e. does not start and end on a
# multiple of it, sleeps WRITE_PCT (READ_PCT) per cent longer. Reads
# return zeros, writes are dropped: nothing is stored.
#
# An erase unit (CROSS above 0): a read whose bytes lie in two units of
# CROSS bytes (it crosses a multiple of CROSS, as a flash card's reads
# that span two allocation units do) sleeps CROSS_PCT per cent longer,
# on top of the rest. CROSS need not be a power of two (12 MiB).
#
# Jitter (JITTER_PCT above 0): time is cut into slots of JITTER_MS, and
# every request that starts in a slot sleeps its cost times exp(σ z), z a
# standard normal drawn per slot (the device's state at that moment, shared
# by every request then, as a garbage collection pass would be) and σ =
# JITTER_PCT / 100. A window of W ms averages about W / JITTER_MS slots, so
# the jitter averages out as windows grow. With JITTER_ON_S and
# JITTER_OFF_S it is on for the first, then off for the second, in turn
# from the server's start: noise that comes and goes.
#
#   nbdkit -f -U SOCK -t 32 python tests/vm/costdisk.py \
#       size=4294967296 unit=16384 write-pct=5 read-pct=0 base-us=10000 \
#       jitter-pct=12 jitter-ms=20 jitter-on-s=20 jitter-off-s=20
#
# Requests run in parallel (one nbdkit thread each; time.sleep releases
# the interpreter lock), so requests in flight overlap as on a real device.
import math
import random
import time

import nbdkit

API_VERSION = 2

params = {"size": None, "unit": 4096, "write-pct": 0.0, "read-pct": 0.0, "base-us": 10000.0,
          "jitter-pct": 0.0, "jitter-ms": 20.0, "jitter-on-s": 0.0, "jitter-off-s": 0.0,
          "cross": 0, "cross-pct": 0.0, "seed": 1}
started = time.monotonic()


def config(key, value):
    if key not in params:
        raise RuntimeError(f"costdisk: unknown parameter {key} (one of {', '.join(params)})")
    params[key] = int(value) if key in ("size", "unit", "cross", "seed") else float(value)


def config_complete():
    global started
    if not params["size"] or params["size"] <= 0:
        raise RuntimeError("costdisk: size=BYTES is required")
    if params["unit"] <= 0:
        raise RuntimeError("costdisk: unit must be positive")
    if min(params["write-pct"], params["read-pct"], params["base-us"], params["jitter-pct"],
           params["jitter-on-s"], params["jitter-off-s"], params["cross"], params["cross-pct"]) < 0:
        raise RuntimeError("costdisk: write-pct, read-pct, base-us and the jitter's are not negative")
    if params["jitter-ms"] <= 0:
        raise RuntimeError("costdisk: jitter-ms must be positive")
    started = time.monotonic()


def jitter():
    """The factor of a request starting now: exp(σ z) of its slot, or 1."""
    sigma = params["jitter-pct"] / 100
    if not sigma:
        return 1.0
    t = time.monotonic() - started
    on, off = params["jitter-on-s"], params["jitter-off-s"]
    if off and t % (on + off) >= on:
        return 1.0
    slot = int(t * 1000 / params["jitter-ms"])
    z = random.Random(params["seed"] * 1000003 + slot).gauss(0.0, 1.0)
    return math.exp(sigma * z)


def thread_model():
    return nbdkit.THREAD_MODEL_PARALLEL


def open(readonly):
    return {}


def get_size(h):
    return params["size"]


def can_multi_conn(h):
    return True


def can_zero(h):
    return True


def can_trim(h):
    return False


def can_fua(h):
    return nbdkit.FUA_NATIVE


def can_flush(h):
    return True


def partial(count, offset):
    """Whether [offset, offset + count) covers part of a unit."""
    u = params["unit"]
    return offset % u != 0 or (offset + count) % u != 0


def crosses(count, offset):
    """Whether [offset, offset + count) lies in two erase units."""
    c = params["cross"]
    return c > 0 and offset // c != (offset + count - 1) // c


def cost(count, offset, pct, cross_pct=0.0):
    """Sleeps one request's latency: the base, longer by pct when partial
    and by cross_pct when it crosses an erase unit's boundary."""
    s = params["base-us"] / 1e6 * jitter()
    if pct and partial(count, offset):
        s *= 1 + pct / 100
    if cross_pct and crosses(count, offset):
        s *= 1 + cross_pct / 100
    time.sleep(s)


def pread(h, buf, offset, flags):
    cost(len(buf), offset, params["read-pct"], params["cross-pct"])
    buf[:] = bytes(len(buf))


def pwrite(h, buf, offset, flags):
    cost(len(buf), offset, params["write-pct"])


def zero(h, count, offset, flags):
    cost(count, offset, params["write-pct"])


def flush(h, flags):
    pass
