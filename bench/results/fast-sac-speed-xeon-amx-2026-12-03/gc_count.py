# usage: PYTHONPATH=<folder holding this file as sitecustomize.py> GC_OUT=F python -m bench gym-split ...: appends each process's CPU and collector time by generation to F at exit
import gc, time, atexit, os, sys
_t = {0: [0.0, 0], 1: [0.0, 0], 2: [0.0, 0]}
_s = [0.0]
def _cb(phase, info):
    if phase == "start":
        _s[0] = time.thread_time()
    else:
        d = _t[info["generation"]]; d[0] += time.thread_time() - _s[0]; d[1] += 1
gc.callbacks.append(_cb)
def _dump():
    with open(os.environ.get("GC_OUT", "/tmp/gc_out.txt"), "a") as f:
        f.write(f"{os.getpid()} {' '.join(sys.argv[:2])[:120]} cpu={time.process_time():.1f} gc={ {g: (round(v[0],3), v[1]) for g, v in _t.items()} }\n")
atexit.register(_dump)
