# measurement only (session 2026-12-03 evening): per-process CPU at exit when CPUACCT_DIR is set
import os
d = os.environ.get("CPUACCT_DIR")
if d:
    import atexit, sys, time, json
    t0 = time.process_time()
    def _w(tag="exit"):
        try:
            r = os.times()
            with open(os.path.join(d, f"{os.getpid()}.jsonl"), "a") as f:
                f.write(json.dumps({"pid": os.getpid(), "ppid": os.getppid(), "argv": open("/proc/self/cmdline","rb").read().replace(b"\0",b" ").decode(errors="replace")[:400], "tag": tag,
                                    "cpu": r.user + r.system, "children": r.children_user + r.children_system}) + "\n")
        except Exception:
            pass
    atexit.register(_w)
    sys.modules[__name__].mark = _w
    if b"mlagents-learn" in open("/proc/self/cmdline","rb").read():
        import threading
        def _patch():
            while not hasattr(sys.modules.get("mlagents.trainers.trainer_controller"), "TrainerController"):
                time.sleep(0.005)
            tc = sys.modules["mlagents.trainers.trainer_controller"].TrainerController
            _w("tc_imported")
            def wrap(name, before, after):
                orig = getattr(tc, name)
                def f(self, *a, **k):
                    if before: _w(before)
                    try:
                        return orig(self, *a, **k)
                    finally:
                        if after: _w(after)
                setattr(tc, name, f)
            wrap("start_learning", "start_learning", "end_learning")
            wrap("_reset_env", None, "reset_done")
            wrap("_save_models", "save_start", "save_end")
            # first advance after the reset: the loop
            orig_adv = tc.advance
            state = {"n": 0}
            def adv(self, *a, **k):
                state["n"] += 1
                if state["n"] in (1, 2, 100):
                    _w(f"advance{state['n']}")
                return orig_adv(self, *a, **k)
            tc.advance = adv
        threading.Thread(target=_patch, daemon=True).start()
