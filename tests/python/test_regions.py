"""The ATen region tier: every curated op against eager torch, values and
gradients bit for bit; the seed's model.ppy; training; errors, fallbacks and
the cache's torch key; and that a program without regions never loads torch."""

import importlib
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from conftest import ROOT  # noqa: E402

# (function name, parameters, body expression, input factory). Tensors made by
# the factory with requires_grad get their gradients compared.
F32 = torch.float32


def _r(*shape, grad=True, dtype=F32, low=None):
    t = torch.randn(*shape, dtype=dtype)
    if low is not None:
        t = t.abs() + low
    return t.requires_grad_(grad)


CASES = [
    ("add", "x: torch.Tensor, y: torch.Tensor", "torch.add(x, y)", lambda: (_r(3, 4), _r(3, 4))),
    ("add_alpha", "x: torch.Tensor, y: torch.Tensor", "torch.add(x, y, alpha=2.5)", lambda: (_r(3, 4), _r(4))),
    ("add_op", "x: torch.Tensor, y: torch.Tensor", "x + y", lambda: (_r(3, 4), _r(3, 4))),
    ("add_number", "x: torch.Tensor", "x + 2", lambda: (_r(3, 4),)),
    ("radd_number", "x: torch.Tensor", "1.5 + x", lambda: (_r(3, 4),)),
    ("add_method", "x: torch.Tensor, y: torch.Tensor", "x.add(y)", lambda: (_r(3, 4), _r(3, 4))),
    ("sub", "x: torch.Tensor, y: torch.Tensor", "torch.sub(x, y)", lambda: (_r(3, 4), _r(3, 4))),
    ("sub_op", "x: torch.Tensor, s: float", "x - s", lambda: (_r(3, 4), 0.25)),
    ("rsub", "x: torch.Tensor", "1 - x", lambda: (_r(3, 4),)),
    ("mul", "x: torch.Tensor, y: torch.Tensor", "torch.mul(x, y)", lambda: (_r(3, 4), _r(3, 4))),
    ("mul_op", "x: torch.Tensor, y: torch.Tensor", "x * y", lambda: (_r(3, 4), _r(1, 4))),
    ("rmul", "x: torch.Tensor, k: int", "k * x", lambda: (_r(3, 4), 3)),
    ("div", "x: torch.Tensor, y: torch.Tensor", "torch.div(x, y)", lambda: (_r(3, 4), _r(3, 4, low=0.5))),
    ("div_op", "x: torch.Tensor", "x / 3.0", lambda: (_r(3, 4),)),
    ("rdiv", "x: torch.Tensor", "2.0 / x", lambda: (_r(3, 4, low=0.5),)),
    ("matmul", "x: torch.Tensor, y: torch.Tensor", "torch.matmul(x, y)", lambda: (_r(5, 4), _r(4, 3))),
    ("matmul_op", "x: torch.Tensor, y: torch.Tensor", "x @ y", lambda: (_r(2, 5, 4), _r(4, 3))),
    ("matmul_vector", "x: torch.Tensor, y: torch.Tensor", "x @ y", lambda: (_r(5, 4), _r(4))),
    ("mm", "x: torch.Tensor, y: torch.Tensor", "torch.mm(x, y)", lambda: (_r(5, 4), _r(4, 3))),
    ("neg", "x: torch.Tensor", "torch.neg(x)", lambda: (_r(3, 4),)),
    ("neg_op", "x: torch.Tensor", "-x", lambda: (_r(3, 4),)),
    ("abs", "x: torch.Tensor", "torch.abs(x)", lambda: (_r(3, 4),)),
    ("exp", "x: torch.Tensor", "torch.exp(x)", lambda: (_r(3, 4),)),
    ("log", "x: torch.Tensor", "torch.log(x)", lambda: (_r(3, 4, low=0.1),)),
    ("sqrt", "x: torch.Tensor", "x.sqrt()", lambda: (_r(3, 4, low=0.1),)),
    ("pow_tensor", "x: torch.Tensor, y: torch.Tensor", "torch.pow(x, y)", lambda: (_r(3, 4, low=0.5), _r(3, 4))),
    ("pow_number", "x: torch.Tensor", "x ** 2", lambda: (_r(3, 4),)),
    ("pow_base", "x: torch.Tensor", "2.0 ** x", lambda: (_r(3, 4),)),
    ("pow_fn_base", "x: torch.Tensor", "torch.pow(3, x)", lambda: (_r(3, 4),)),
    ("relu", "x: torch.Tensor", "torch.relu(x)", lambda: (_r(3, 4),)),
    ("relu_f", "x: torch.Tensor", "F.relu(x)", lambda: (_r(3, 4),)),
    ("sigmoid", "x: torch.Tensor", "torch.sigmoid(x)", lambda: (_r(3, 4),)),
    ("tanh", "x: torch.Tensor", "x.tanh()", lambda: (_r(3, 4),)),
    ("gelu", "x: torch.Tensor", "F.gelu(x)", lambda: (_r(3, 4),)),
    ("gelu_tanh", "x: torch.Tensor", "F.gelu(x, approximate='tanh')", lambda: (_r(3, 4),)),
    ("softmax", "x: torch.Tensor", "torch.softmax(x, 1)", lambda: (_r(3, 4),)),
    ("softmax_f", "x: torch.Tensor, d: int", "F.softmax(x, dim=d)", lambda: (_r(3, 4), 0)),
    ("log_softmax", "x: torch.Tensor", "F.log_softmax(x, dim=-1)", lambda: (_r(3, 4),)),
    ("mean", "x: torch.Tensor", "torch.mean(x)", lambda: (_r(3, 4),)),
    ("mean_dim", "x: torch.Tensor", "x.mean(dim=1, keepdim=True)", lambda: (_r(3, 4),)),
    ("mean_dims", "x: torch.Tensor", "torch.mean(x, (0, 2))", lambda: (_r(3, 4, 2),)),
    ("sum", "x: torch.Tensor", "torch.sum(x)", lambda: (_r(3, 4),)),
    ("sum_dim", "x: torch.Tensor", "x.sum(0)", lambda: (_r(3, 4),)),
    ("max", "x: torch.Tensor", "torch.max(x)", lambda: (_r(3, 4),)),
    ("max_dim", "x: torch.Tensor", "torch.max(x, dim=1)[0]", lambda: (_r(3, 4),)),
    ("max_dim_indices", "x: torch.Tensor", "torch.max(x, 1, keepdim=True).indices", lambda: (_r(3, 4),)),
    ("min", "x: torch.Tensor", "x.min()", lambda: (_r(3, 4),)),
    ("min_dim", "x: torch.Tensor", "torch.min(x, 0).values", lambda: (_r(3, 4),)),
    ("transpose", "x: torch.Tensor", "torch.transpose(x, 0, 1) * 1.0", lambda: (_r(3, 4),)),
    ("t", "x: torch.Tensor", "x.t() * 2", lambda: (_r(3, 4),)),
    ("reshape", "x: torch.Tensor", "torch.reshape(x, (4, 3)) * 1", lambda: (_r(3, 4),)),
    ("reshape_method", "x: torch.Tensor, n: int", "x.reshape(n, -1) * 1", lambda: (_r(3, 4), 6)),
    ("view", "x: torch.Tensor", "x.view(12) * 1", lambda: (_r(3, 4),)),
    ("flatten", "x: torch.Tensor", "torch.flatten(x, 1) * 1", lambda: (_r(2, 3, 4),)),
    ("unsqueeze", "x: torch.Tensor", "x.unsqueeze(0) * 1", lambda: (_r(3, 4),)),
    ("squeeze", "x: torch.Tensor", "torch.squeeze(x) * 1", lambda: (_r(3, 1, 4),)),
    ("squeeze_dim", "x: torch.Tensor", "x.squeeze(1) * 1", lambda: (_r(3, 1, 4),)),
    ("cat", "x: torch.Tensor, y: torch.Tensor", "torch.cat([x, y], dim=1)", lambda: (_r(3, 4), _r(3, 2))),
    ("cat_tuple", "x: torch.Tensor, y: torch.Tensor", "torch.cat((x, y))", lambda: (_r(3, 4), _r(2, 4))),
    ("clamp", "x: torch.Tensor", "torch.clamp(x, min=-0.5, max=0.5)", lambda: (_r(3, 4),)),
    ("clamp_min", "x: torch.Tensor", "x.clamp(min=0)", lambda: (_r(3, 4),)),
    ("where", "x: torch.Tensor, y: torch.Tensor", "torch.where(x > 0, x, y)", lambda: (_r(3, 4), _r(3, 4))),
    ("where_scalar", "x: torch.Tensor", "torch.where(x < 0.25, x, 0.0)", lambda: (_r(3, 4),)),
    ("compare", "x: torch.Tensor, y: torch.Tensor", "(x >= y, x != 0, 0 < x, x == y, x <= 1)",
     lambda: (_r(3, 4), _r(3, 4))),
    ("linear", "x: torch.Tensor, w: torch.Tensor, b: torch.Tensor", "F.linear(x, w, b)",
     lambda: (_r(5, 4), _r(3, 4), _r(3))),
    ("linear_nobias", "x: torch.Tensor, w: torch.Tensor", "F.linear(x, w)", lambda: (_r(5, 4), _r(3, 4))),
    ("mse_loss", "x: torch.Tensor, y: torch.Tensor", "F.mse_loss(x, y)", lambda: (_r(5, 4), _r(5, 4))),
    ("mse_loss_sum", "x: torch.Tensor, y: torch.Tensor", "F.mse_loss(x, y, reduction='sum')",
     lambda: (_r(5, 4), _r(5, 4))),
    ("cross_entropy", "x: torch.Tensor, y: torch.Tensor", "F.cross_entropy(x, y)",
     lambda: (_r(6, 5), torch.tensor([0, 4, 2, 2, 1, 3]))),
    ("cross_entropy_smooth", "x: torch.Tensor, y: torch.Tensor",
     "F.cross_entropy(x, y, ignore_index=2, label_smoothing=0.1)",
     lambda: (_r(6, 5), torch.tensor([0, 4, 2, 2, 1, 3]))),
    ("dropout", "x: torch.Tensor", "F.dropout(x, 0.3)", lambda: (_r(8, 8),)),
    ("dropout_eval", "x: torch.Tensor, train: bool", "F.dropout(x, p=0.5, training=train)", lambda: (_r(8, 8), False)),
    ("float64", "x: torch.Tensor, y: torch.Tensor", "torch.relu(x @ y + 1e-3).sum(dim=0)",
     lambda: (_r(4, 4, dtype=torch.float64), _r(4, 2, dtype=torch.float64))),
]


def _module_source():
    lines = ["import torch", "import torch.nn.functional as F", ""]
    for name, params, body, _ in CASES:
        lines += [f"def {name}({params}) -> torch.Tensor:", f"    return {body}", ""]
    return "\n".join(lines)


@pytest.fixture
def ppy_module(tmp_path, monkeypatch):
    """Imports `source` under ppy from a private cache, as a fresh module."""
    import ppy  # noqa: F401  installs the hook

    monkeypatch.setenv("PPY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PPY_IMPORT", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    created = []

    def load(name, source):
        (tmp_path / f"{name}.ppy").write_text(source)
        importlib.invalidate_caches()
        created.append(name)
        return importlib.import_module(name)

    yield load
    for name in created:
        sys.modules.pop(name, None)


def _leaves(values):
    return tuple(v.detach().clone().requires_grad_(v.requires_grad) if isinstance(v, torch.Tensor) else v
                 for v in values)


def _outputs(result):
    return result if isinstance(result, tuple) else (result,)


def test_every_curated_op_matches_eager_values_and_gradients(ppy_module):
    module = ppy_module("region_ops", _module_source())
    for name, _, body, make in CASES:
        function = getattr(module, name)
        assert getattr(function, "__ppy_region__", False), f"{name} ({body}) is not a region"
        torch.manual_seed(1)
        inputs = make()
        region_inputs, eager_inputs = _leaves(inputs), _leaves(inputs)
        torch.manual_seed(7)
        region = _outputs(function(*region_inputs))
        torch.manual_seed(7)
        eager = _outputs(function.__ppy_python__(*eager_inputs))
        assert len(region) == len(eager)
        for r, e in zip(region, eager):
            assert r.dtype == e.dtype and torch.equal(r, e), f"{name}: {body}"
            assert (r.grad_fn is None) == (e.grad_fn is None), name
            if r.grad_fn is not None:
                assert type(r.grad_fn).__name__ == type(e.grad_fn).__name__, name
        differentiable = [k for k, r in enumerate(region) if r.requires_grad]
        if not differentiable:
            continue
        total_region = sum(region[k].double().sum() * (k + 1) for k in differentiable)
        total_eager = sum(eager[k].double().sum() * (k + 1) for k in differentiable)
        total_region.backward()
        total_eager.backward()
        for r, e in zip(region_inputs, eager_inputs):
            if isinstance(r, torch.Tensor) and r.requires_grad:
                assert torch.equal(r.grad, e.grad), f"{name}: gradients differ"


def test_seed_model_prints_the_same_loss_both_ways(runner):
    folder = ROOT / "examples" / "31_torchrun"
    python = runner.python("model.ppy", cwd=folder)
    native = runner.ppy("run", "model.ppy", cwd=folder)
    assert python.returncode == 0, python.stderr
    assert native.returncode == 0, native.stderr
    # The digits are torch's on this CPU (its kernels differ between machines):
    # the reference is plain Python's, which ppy must match exactly.
    assert python.stdout.startswith("# aten region: False\nloss=")
    assert native.stdout == python.stdout.replace("# aten region: False", "# aten region: True")


TRAIN = textwrap.dedent("""
    import ppy
    import torch
    import model

    def train(loss_fn):
        torch.manual_seed(3)
        x = torch.randn(64, 8)
        y = torch.randn(64, 1)
        w1 = torch.randn(8, 32, requires_grad=True)
        b1 = torch.zeros(32, requires_grad=True)
        w2 = torch.randn(32, 1, requires_grad=True)
        b2 = torch.zeros(1, requires_grad=True)
        losses = []
        for _ in range(30):
            loss = loss_fn(x, y, w1, b1, w2, b2)
            loss.backward()
            with torch.no_grad():
                for p in (w1, b1, w2, b2):
                    p -= 0.01 * p.grad
                    p.grad = None
            losses.append(loss.item())
        return losses

    assert model.forward_loss.__ppy_region__
    region = train(model.forward_loss)
    eager = train(model.forward_loss.__ppy_python__)
    print(region == eager, region[0], region[-1])
""")


def test_training_with_a_region_follows_eager_to_the_last_digit(runner, tmp_path):
    (tmp_path / "model.ppy").write_text((ROOT / "examples" / "31_torchrun" / "model.ppy").read_text())
    (tmp_path / "train.py").write_text(TRAIN)
    result = runner.python("train.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    same, first, last = result.stdout.split()
    assert same == "True" and first != last


def test_a_program_without_regions_never_imports_torch(runner, tmp_path):
    (tmp_path / "plain.ppy").write_text("def twice(x: int) -> int:\n    return 2 * x\n")
    (tmp_path / "main.py").write_text(
        "import sys, ppy, plain\n"
        "print(plain.twice(21), 'torch' in sys.modules, 'ppy._regions' in sys.modules)\n")
    result = runner.python("main.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "42 False False\n"


def test_the_executor_loads_at_the_first_call_not_at_import(ppy_module):
    module = ppy_module("lazy_region", "import torch\n\ndef double(x: torch.Tensor) -> torch.Tensor:\n"
                                       "    return x * 2\n")
    sys.modules.pop("ppy._regions", None)
    assert module.double.__ppy_region__
    x = torch.ones(2)
    assert torch.equal(module.double(x), x * 2)
    assert "ppy._regions" in sys.modules


ERRORS = textwrap.dedent("""
    import torch

    def project(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        scaled: torch.Tensor = x * 2
        return torch.matmul(scaled, w)
""")


def test_aten_errors_are_eagers_exceptions_with_the_ppy_line(ppy_module):
    module = ppy_module("region_errors", ERRORS)
    x, w = torch.ones(3, 4), torch.ones(5, 2)
    with pytest.raises(RuntimeError) as region_error:
        module.project(x, w)
    with pytest.raises(RuntimeError) as eager_error:
        module.project.__ppy_python__(x, w)
    assert str(region_error.value) == str(eager_error.value)
    frames = [(entry.path, entry.lineno + 1) for entry in region_error.traceback]
    assert any(str(path).endswith("region_errors.ppy") and line == 6 for path, line in frames), frames


def test_dropout_checks_its_probability_as_eager_does(ppy_module):
    module = ppy_module("region_dropout", "import torch\nimport torch.nn.functional as F\n\n"
                                          "def drop(x: torch.Tensor, p: float) -> torch.Tensor:\n"
                                          "    return F.dropout(x, p)\n")
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        module.drop(torch.ones(3), 1.5)


def test_calls_the_executor_cannot_take_run_the_python_function(ppy_module):
    module = ppy_module("region_fallback", "import torch\n\ndef scale(x: torch.Tensor, k: float) -> torch.Tensor:\n"
                                           "    return x * k\n")

    class Tagged(torch.Tensor):
        pass

    x = torch.arange(3.0)
    assert torch.equal(module.scale(x, k=2.0), x * 2)  # keyword binding
    assert torch.equal(module.scale(x, 2), x * 2)  # an int where a float is annotated: Python
    tagged = module.scale(x.as_subclass(Tagged), 2.0)
    assert type(tagged) is Tagged  # the subclass's __torch_function__ kept it
    with pytest.raises(TypeError):
        module.scale(x)


MIXED = textwrap.dedent("""
    import torch
    import torch.nn.functional as F

    def unusual(x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = torch.relu(x)
        return F.silu(y)

    def branching(x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return x
        return -x
""")


def test_check_names_what_keeps_a_function_off_the_region_tier(runner, tmp_path):
    (tmp_path / "mixed.ppy").write_text(MIXED)
    result = runner.ppy("check", "-v", "mixed.ppy", cwd=tmp_path, PPY_OBJECT_CODE="compile")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "unusual: vm; not a region: torch.nn.functional.silu is not a curated torch operation at mixed.ppy:7:12" \
        in result.stdout
    assert "branching: vm; not a region: a statement other than an assignment or a return at mixed.ppy:10:5" \
        in result.stdout


def test_dis_and_trace_show_the_op_sequence(runner):
    folder = ROOT / "examples" / "31_torchrun"
    dis = runner.ppy("dis", "model.ppy", "forward_loss", cwd=folder)
    assert dis.returncode == 0, dis.stderr
    assert dis.stdout.startswith("region forward_loss(x: Tensor, y: Tensor, w1: Tensor")
    assert "hidden = Relu(" in dis.stdout and "Mean(" in dis.stdout
    trace = runner.ppy("run", "--trace", "model.ppy", cwd=folder)
    assert "__main__.forward_loss: region (8 ATen ops)" in trace.stderr
    assert "region: forward_loss runs as 8 ATen ops" in trace.stderr
    assert "__main__.forward_loss                             1 calls      8 ops          0 as Python" in trace.stderr


def test_region_entries_are_keyed_by_the_executors_torch(ppy_module, tmp_path, monkeypatch):
    from ppy import _entry, _hook, _region_build

    ppy_module("keyed", "import torch\n\ndef neg(x: torch.Tensor) -> torch.Tensor:\n    return -x\n")
    path = str(tmp_path / "keyed.ppy")
    assert _hook.load(path, "keyed", _hook.find_source).outcome == "hit"
    monkeypatch.setattr(_region_build, "TORCH_VERSION", "0.0.0")
    reloaded = _hook.load(path, "keyed", _hook.find_source)
    assert (reloaded.outcome, reloaded.reason) == ("built", _entry.TORCH_CHANGED)
