#!/bin/bash
# SAC's Ape-X actors with and without the acting copy (acting.ActingCopy): a learner and 2 actors on Pendulum-v1,
# 6,000 steps, the two settings alternating twice; nothing else running. Prints one JSON line per run.
cd /work/main
out=/root/saccopy
for i in 1 2; do for copy in false true; do
  d=$out/$copy-$i; rm -rf $d $d.log
  start=$(date +%s.%N)
  timeout 400 .venv/bin/python train.py --algo sac --num-workers 2 --env-id Pendulum-v1 --mode child --log-dir $d \
      --no-tensorboard --set max_global_steps=6000 --set acting_copy=$copy > $d.log 2>&1
  rc=$?
  end=$(date +%s.%N)
  .venv/bin/python - "$d" "$copy" "$start" "$end" "$rc" <<'PY' | tee -a $out/results.jsonl
import glob, json, os, sys
d, copy, start, end, rc = sys.argv[1:]
status = {}
for path in sorted(glob.glob(os.path.join(d, "status_*.json"))):
    s = json.load(open(path))
    status[s["name"]] = {"seconds_in": s.get("seconds_in"), "lived": round(s["time"] - s["started"], 1),
                         "global_step": s.get("global_step"), "updates": s.get("updates")}
print(json.dumps({"acting_copy": copy == "true", "rc": int(rc), "wall_s": round(float(end) - float(start), 1),
                  "processes": status}))
PY
done; done
