"""Runs as a child process with npufit's Python: stdlib + ethosu.vela only, never npufit.

argv: model.tflite response.json. Asks Vela's own operator checks, through its library and without compiling,
whether each operator of a TFLite file runs on the NPU: the TFLite semantic checks (model_reader.read_model) and
the supported-operator checks (TFLiteSupportedOperators.is_operator_supported), with the reason text Vela prints.
A child process because vendor code never runs inside npufit itself (a crash there must not take npufit down)."""

import contextlib
import io
import json
import sys
import traceback


def _lines(text):
    return [s.strip() for s in text.splitlines() if s.strip()]


def _reason(printed):
    """Vela prints 'Warning: <OP> '<name>' is not supported ...' then ' - <constraint>' and the values it saw."""
    lines = [s for s in _lines(printed) if not s.startswith(("Warning:", "Info:"))]
    return " ".join(s[2:] if s.startswith("- ") else s for s in lines)


def main(model, resp_path):
    resp = {"ok": False, "ops": []}
    try:
        import importlib.metadata as md

        resp["version"] = md.version("ethos-u-vela")
        from ethosu.vela import model_reader
        from ethosu.vela.operation import Op
        from ethosu.vela.tflite_supported_operators import TFLiteSupportedOperators

        semantic = io.StringIO()
        with contextlib.redirect_stdout(semantic):
            nng, _ = model_reader.read_model(model, model_reader.ModelReaderOptions())
        semantic_text = semantic.getvalue()
        checker = TFLiteSupportedOperators()
        for sg in nng.subgraphs:
            for op in sg.get_all_ops():
                if op.type in (Op.Placeholder, Op.SubgraphInput, Op.Const):
                    continue
                out = io.StringIO()
                npu = bool(op.run_on_npu)
                if npu:
                    with contextlib.redirect_stdout(out):
                        npu = bool(checker.is_operator_supported(op))
                    reason = _reason(out.getvalue()) or " ".join(_lines(out.getvalue()))
                else:  # the semantic checks already placed it on the CPU; their warning names the op
                    mark = f"'{op.name}'"
                    block = semantic_text.split(mark, 1)[1] if mark in semantic_text else ""
                    reason = _reason(block.split("Warning:", 1)[0])
                    reason = (
                        f"Unsupported TensorFlow Lite semantics: {reason}"
                        if reason
                        else "Unsupported TensorFlow Lite semantics"
                    )
                resp["ops"].append(
                    {
                        "index": getattr(op, "op_index", None),
                        "op": str(op.type.name),
                        "ofm": op.name,
                        "npu": npu,
                        "reason": "" if npu else reason,
                    }
                )
        resp["ok"] = True
    except Exception as e:  # reported to the parent, which says it in one line
        resp["error"] = f"{type(e).__name__}: {e}"
        resp["traceback"] = traceback.format_exc()
    with open(resp_path, "w") as f:
        json.dump(resp, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
