"""Runs INSIDE the rknn env (numpy<2, onnx 1.18): stdlib + rknn-toolkit2 only, never npufit.

argv: request.json response.json. Builds an .rknn with a verbose log (the parent parses the Network
Layer Information Table from stdout) and, if asked, runs the toolkit's simulator on given .npy inputs."""

import json
import sys
import time
import traceback


def main(req_path, resp_path):
    req = json.load(open(req_path))
    resp = {"ok": False, "stage": "import", "timings": {}}

    def save():
        with open(resp_path, "w") as f:
            json.dump(resp, f, indent=2)

    def step(name, fn):
        resp["stage"] = name
        t0 = time.perf_counter()
        ret = fn()
        resp["timings"][name] = round(time.perf_counter() - t0, 3)
        if ret not in (0, None) and not isinstance(ret, list):
            raise RuntimeError(f"RKNN.{name} returned {ret}")
        return ret

    try:
        import importlib.metadata as md

        resp["version"] = md.version("rknn-toolkit2")
        import numpy as np
        from rknn.api import RKNN

        rknn = RKNN(verbose=True)
        cfg = {"target_platform": req["platform"]}
        if req.get("disable_rules"):
            cfg["disable_rules"] = list(req["disable_rules"])
        cfg.update(req.get("config", {}))
        step("config", lambda: rknn.config(**cfg))
        load_kw = {"model": req["model"]}
        if req["model"].lower().endswith(".tflite"):  # the toolkit reads TFLite itself (a quantized file stays so)
            step("load_tflite", lambda: rknn.load_tflite(**load_kw))
        else:
            if req.get("inputs") and req.get("input_size_list"):
                load_kw.update(inputs=req["inputs"], input_size_list=req["input_size_list"])
            step("load_onnx", lambda: rknn.load_onnx(**load_kw))
        step("build", lambda: rknn.build(do_quantization=bool(req.get("quantize")), dataset=req.get("dataset")))
        step("export_rknn", lambda: rknn.export_rknn(req["out"]))
        resp["ok"] = True  # the .rknn exists: a simulator failure below is reported, not fatal
        if req.get("sim_inputs"):
            try:
                feeds = [np.load(p) for p in req["sim_inputs"]]
                step("init_runtime", lambda: rknn.init_runtime())
                # ONNX feeds are NCHW; the toolkit's default for 4-D inputs is NHWC (non-4-D: format unused)
                kw = {"data_format": "nchw"} if any(f.ndim == 4 for f in feeds) else {}
                outs = step("inference", lambda: rknn.inference(inputs=feeds, **kw))
                if outs is None:
                    raise RuntimeError("RKNN.inference returned None")
                paths = []
                for i, o in enumerate(outs):
                    p = f"{req['sim_prefix']}{i}.npy"
                    np.save(p, np.asarray(o))
                    paths.append(p)
                resp["sim_outputs"] = paths
            except Exception as e:
                traceback.print_exc()
                resp["sim_error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:300]}"
        rknn.release()
        resp["stage"] = "done"
    except Exception as e:  # reported to the parent as data; the traceback goes to the log
        traceback.print_exc()
        resp["error"] = f"{type(e).__name__}: {e}"
    save()
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
