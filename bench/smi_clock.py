"""bench/smi_clock.py: the SM clock, board power and temperature of the GPU torch runs on, sampled
by nvidia-smi in the background while a bench times its ops, and averaged over a time window.

Whether a GEMM is slower per clock or ran at a lower clock (a power or thermal limit) is not in
its time; these samples say which.  Used by bench/gemm_clock.py and bench/gemm_llm.py.

    smi = Sampler(path, torch.cuda.get_device_properties(0), period_ms=20)
    ...                                  # time things; note (wall start, wall end) of each
    smi.stop()
    w = window(smi.samples(), t0, t1)    # None, or {"mhz", "watts", "temp", "n", "reasons"}

Power is `power.draw.instant` where the driver has it; `power.draw` (Sampler.power says which) is
a one-second average on recent GPUs, so over a block of a few milliseconds it says little.  Each
sample carries its GPU's UUID, and only torch's GPU's samples are read back.  nvidia-smi's own
errors go to PATH.err.  The arguments nvidia-smi gets are fixed here: nothing a user typed reaches
it.
"""
import datetime
import os
import subprocess
import time

FIELDS = "timestamp,uuid,clocks.sm,%s,temperature.gpu,clocks_throttle_reasons.active"


class Sampler:
    def __init__(self, path, props, period_ms=20):
        self.path, self.note, self.proc, self.power = path, None, None, None
        uuid = str(getattr(props, "uuid", "") or "")
        self.uuid = (uuid if uuid.startswith("GPU-") else "GPU-" + uuid) if uuid else None
        tried = []
        # the GPU by UUID and instantaneous power first; then without either, one at a time
        for by_id, power in ((True, "power.draw.instant"), (True, "power.draw"), (False, "power.draw.instant"),
                             (False, "power.draw")):
            if by_id and not self.uuid:
                continue
            query = ["nvidia-smi", "--query-gpu=" + FIELDS % power, "--format=csv,noheader,nounits", "-lms",
                     str(int(period_ms)), "-f", path]
            if by_id:
                query[1:1] = ["-i", self.uuid]
            try:
                with open(path + ".err", "a") as err:
                    proc = subprocess.Popen(query, stdout=subprocess.DEVNULL, stderr=err)
            except OSError as e:
                self.note = "nvidia-smi not started (%s): no clocks" % e
                return
            time.sleep(1.0)
            if proc.poll() is None:
                self.proc, self.power = proc, power
                if tried:
                    self.note = "nvidia-smi sampling %s%s (before: %s exited; %s.err)" % (
                        power, "" if by_id else " of every GPU, torch's kept by UUID", "; ".join(tried), path)
                return
            tried.append("%s%s (exit %d)" % (power, " -i" if by_id else "", proc.returncode))
        self.note = "nvidia-smi exited at once every way it was asked (%s; %s.err): no clocks" % ("; ".join(tried), path)

    def stop(self):
        """Ends the sampling (a second call does nothing); returns a note to print (or None)."""
        if self.proc is None:
            return self.note
        if self.proc.poll() is not None:   # it ended by itself: a field this driver does not know, or no GPU
            self.note = "nvidia-smi stopped early (exit %d; %s.err): the clocks end there" % (
                self.proc.returncode, self.path)
        else:
            self.proc.terminate()
        self.proc.wait()
        self.proc = None
        return self.note

    def samples(self):
        return read_samples(self.path, self.uuid)


def read_samples(path, uuid=None):
    """[(wall time, SM MHz, watts, temperature C, throttle reasons)] of an nvidia-smi CSV file in
    FIELDS' order (noheader, nounits), in file order, of the GPU `uuid` (None: every line); lines
    it cannot read are left out."""
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as fh:
        for line in fh:
            f = [x.strip() for x in line.split(",")]
            try:
                if uuid and f[1] != uuid:
                    continue
                ts = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
                out.append((ts, float(f[2]), float(f[3]), float(f[4]), f[5]))
            except (ValueError, IndexError):
                continue   # a "[N/A]" field, a cut last line
    return out


def window(samples, t0, t1):
    """The samples from wall time t0 to t1 averaged (temperature: the largest), or None."""
    return windows(samples, [(t0, t1)])


def windows(samples, spans):
    """The samples inside any of the (t0, t1) spans (an op timed in several rounds) averaged, or None."""
    win = [s for s in samples if any(a <= s[0] <= b for a, b in spans)]
    if not win:
        return None
    return {"mhz": sum(s[1] for s in win) / len(win), "watts": sum(s[2] for s in win) / len(win),
            "temp": max(s[3] for s in win), "n": len(win), "reasons": ",".join(sorted(set(s[4] for s in win)))}
