"""Where kernels run besides the main process (issue 17): torch DataLoader
workers (fork, spawn and forkserver), a multiprocessing pool on a cold cache,
and a module reloaded after an edit. Each checks ppy's build record
(build.log): however many processes import a kernel, it is built once."""

import textwrap

import pytest

KERNEL = textwrap.dedent("""
    from ppy import Buffer

    def scaled_sum(xs: Buffer[float], k: float) -> float:
        s = 0.0
        for i in range(len(xs)):
            s += k * xs[i]
        return s
""")


def _builds(runner):
    log = runner.cache_dir / "build.log"
    return [line for line in log.read_text().splitlines() if "module=features" in line] if log.exists() else []


@pytest.fixture
def project(tmp_path):
    (tmp_path / "features.ppy").write_text(KERNEL)
    return tmp_path


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_dataloader_workers_use_the_parents_build(runner, project, method):
    pytest.importorskip("torch")
    (project / "data.py").write_text(textwrap.dedent("""
        import array, os, ppy, torch, features

        class Rows(torch.utils.data.Dataset):
            def __len__(self):
                return 8

            def __getitem__(self, i):
                row = array.array("d", [float(i + j) for j in range(4)])
                return features.scaled_sum(row, 0.5), ppy.tier(features.scaled_sum), os.getpid()
    """))
    main = textwrap.dedent(f"""
        import os, torch, data
        if __name__ == "__main__":
            loader = torch.utils.data.DataLoader(data.Rows(), batch_size=2, num_workers=2,
                                                 multiprocessing_context="{method}")
            values, tiers, pids = [], set(), set()
            for batch in loader:
                values.extend(float(v) for v in batch[0])
                tiers.update(batch[1])
                pids.update(int(p) for p in batch[2])
            print(values, sorted(tiers), len(pids - {{os.getpid()}}))
    """)
    (project / "main.py").write_text(main)
    result = runner.python("main.py", cwd=project, timeout=240)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0, 17.0] ['vm'] 2\n", result.stderr
    assert len(_builds(runner)) == 1
    if method == "fork":
        # Workers forked after the parent compiled machine code run it.
        (project / "main.py").write_text("import ppy, features, array; features.scaled_sum(array.array('d'), 1.0)\n" + main)
        eager = runner.python("main.py", cwd=project, timeout=240, PPY_JIT="eager")
        assert eager.returncode == 0, eager.stderr
        assert eager.stdout == "[3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0, 17.0] ['jit'] 2\n", eager.stderr
        assert len(_builds(runner)) == 1


def test_a_pool_on_a_cold_cache_builds_once(runner, project):
    (project / "main.py").write_text(textwrap.dedent("""
        import multiprocessing

        def work(i):
            import array, ppy, features
            return features.scaled_sum(array.array("d", [float(i)] * 3), 2.0), ppy.tier(features.scaled_sum)

        if __name__ == "__main__":
            import ppy  # the parent installs the hook; only the workers import the kernel
            with multiprocessing.get_context("spawn").Pool(4) as pool:
                print(pool.map(work, range(8)))
    """))
    result = runner.python("main.py", cwd=project, timeout=240)
    assert result.returncode == 0, result.stderr
    assert result.stdout == str([(6.0 * i, "vm") for i in range(8)]) + "\n", result.stderr
    assert len(_builds(runner)) == 1


def test_reload_after_an_edit_rebuilds_and_rebinds(runner, project):
    (project / "main.py").write_text(textwrap.dedent("""
        import array, importlib, ppy, features
        xs = array.array("d", [1.0, 2.0])
        before = features.scaled_sum
        print(features.scaled_sum(xs, 1.0), ppy.tier(features.scaled_sum))
        with open(features.__file__) as handle:
            source = handle.read()
        with open(features.__file__, "w") as handle:
            handle.write(source.replace("s += k * xs[i]", "s += k * xs[i] * 10.0"))
        importlib.reload(features)
        print(features.scaled_sum(xs, 1.0), ppy.tier(features.scaled_sum))
        print(before(xs, 1.0), ppy.tier(before), before is features.scaled_sum)
    """))
    result = runner.python("main.py", cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["3.0 vm", "30.0 vm", "3.0 vm False"]
    assert len(_builds(runner)) == 2


def test_ipython_autoreload_reloads_an_edited_kernel(runner, project):
    pytest.importorskip("IPython")
    (project / "session.py").write_text(textwrap.dedent("""
        import os
        from IPython.core.interactiveshell import InteractiveShell

        shell = InteractiveShell.instance()
        for cell in ("%load_ext ppy", "%load_ext autoreload", "%autoreload 2",
                     "import array, ppy, features; xs = array.array('d', [1.0, 2.0]); kept = features.scaled_sum",
                     "print(features.scaled_sum(xs, 1.0), ppy.tier(features.scaled_sum))"):
            assert shell.run_cell(cell).success, cell
        path = os.path.join(os.getcwd(), "features.ppy")
        with open(path) as handle:
            source = handle.read()
        with open(path, "w") as handle:
            handle.write(source.replace("s += k * xs[i]", "s += k * xs[i] * 10.0"))
        stat = os.stat(path)
        os.utime(path, (stat.st_atime, stat.st_mtime + 2))
        for cell in ("print(features.scaled_sum(xs, 1.0), ppy.tier(features.scaled_sum))",
                     "print(kept(xs, 1.0))"):
            assert shell.run_cell(cell).success, cell
    """))
    result = runner.python("session.py", cwd=project)
    assert result.returncode == 0, result.stderr
    # The edited kernel runs compiled; a function object captured before the
    # reload keeps its old code (autoreload updates only Python functions).
    assert result.stdout.splitlines() == ["3.0 vm", "30.0 vm", "3.0"], result.stdout + result.stderr
    assert len(_builds(runner)) == 2
