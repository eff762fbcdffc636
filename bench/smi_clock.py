"""bench/smi_clock.py: the SM clock, board power and temperature of the GPU torch runs on, sampled
by nvidia-smi in the background while a bench times its ops, and averaged over a time window.

Whether a GEMM is slower per clock or ran at a lower clock (a power or thermal limit) is not in
its time; these samples say which.  Used by bench/gemm_clock.py and bench/gemm_llm.py.

    smi = Sampler(path, torch.cuda.get_device_properties(0), period_ms=20)
    ...                                  # time things; note (wall start, wall end) of each
    smi.stop()
    w = window(smi.samples(), t0, t1)    # None, or {"mhz", "watts", "temp", "n", "reasons"}

The arguments nvidia-smi gets are fixed here: nothing a user typed reaches it.
"""
import datetime
import os
import subprocess
import time

FIELDS = "timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active"


class Sampler:
    def __init__(self, path, props, period_ms=20):
        self.path, self.note = path, None
        query = ["nvidia-smi", "--query-gpu=" + FIELDS, "--format=csv,noheader,nounits", "-lms",
                 str(int(period_ms)), "-f", path]
        uuid = str(getattr(props, "uuid", "") or "")
        if uuid:   # the GPU torch runs on, not every GPU of the host
            query[1:1] = ["-i", uuid if uuid.startswith("GPU-") else "GPU-" + uuid]
        try:
            self.proc = subprocess.Popen(query, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except OSError as e:
            self.proc, self.note = None, "nvidia-smi not started (%s): no clocks" % e
            return
        time.sleep(1.0)
        if self.proc.poll() is not None and "-i" in query:   # this nvidia-smi does not take torch's UUID
            self.note = "nvidia-smi -i %s: exit %d; sampling every GPU of the host instead" % (
                query[2], self.proc.returncode)
            del query[1:3]
            self.proc = subprocess.Popen(query, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self):
        """Ends the sampling (a second call does nothing); returns a note to print (or None)."""
        if self.proc is None:
            return self.note
        if self.proc.poll() is not None:   # it ended by itself: a field this driver does not know, or no GPU
            self.note = "nvidia-smi stopped early (exit %d): no clocks" % self.proc.returncode
        else:
            self.proc.terminate()
        self.proc.wait()
        self.proc = None
        return self.note

    def samples(self):
        return read_samples(self.path)


def read_samples(path):
    """[(wall time, SM MHz, watts, temperature C, throttle reasons)] of an nvidia-smi CSV file in
    FIELDS' order (noheader, nounits), in file order; lines it cannot read are left out."""
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as fh:
        for line in fh:
            f = [x.strip() for x in line.split(",")]
            try:
                ts = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
                out.append((ts, float(f[1]), float(f[2]), float(f[3]), f[4]))
            except (ValueError, IndexError):
                continue   # a "[N/A]" field, a cut last line
    return out


def window(samples, t0, t1):
    """The samples from wall time t0 to t1 averaged (temperature: the largest), or None."""
    win = [s for s in samples if t0 <= s[0] <= t1]
    if not win:
        return None
    return {"mhz": sum(s[1] for s in win) / len(win), "watts": sum(s[2] for s in win) / len(win),
            "temp": max(s[3] for s in win), "n": len(win), "reasons": ",".join(sorted(set(s[4] for s in win)))}


def windows(samples, spans):
    """Like window, over several (t0, t1) spans pooled (an op timed in several rounds)."""
    win = [s for s in samples if any(a <= s[0] <= b for a, b in spans)]
    if not win:
        return None
    return window(win, win[0][0], win[-1][0])
