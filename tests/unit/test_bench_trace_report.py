"""``bench.bench_trace``'s Llama row without running a model: which sizes skip HF eager, the repeats,
the tables and reading with a skipped size, and where its section goes in the output file."""

from __future__ import annotations

from bench import bench_trace
from bench.trace_report import LLAMA_SECTION, NOTES_MARK, SECTION, _llama_reading, _tables, write_section


def _rows(sizes, skipped):
    rows = {}
    for n in sizes:
        f = n / 1024
        rows[(n, "engine")] = dict(median_s=1.0 * f, head_median_s=0.04 * f, peak_mb=75 * f, kept_mb=50 * f)
        rows[(n, "hf_plain")] = dict(median_s=0.9 * f, peak_mb=32 * f, kept_mb=0.0)
        if n not in skipped:
            rows[(n, "hf_eager_attn")] = dict(median_s=3.0 * f * f, peak_mb=330 * f * f, kept_mb=268.4 * f * f)
    return rows


def test_eager_runs_up_to_4096_tokens_and_is_skipped_at_8192():
    sizes = bench_trace.FULL_TOKENS["llama"]
    assert sizes == (1024, 2048, 4096, 8192)
    assert bench_trace.eager_kept_bytes(4096) == 8 * 8 * 4096 * 4096 * 4  # 4.3 GB: L·H·n²·4
    assert bench_trace.eager_estimate_bytes(4096) < bench_trace.EAGER_LIMIT_BYTES
    skipped = bench_trace.skipped_eager("llama", sizes)
    assert list(skipped) == [8192] and round(skipped[8192] / 1e9, 1) == 17.2
    assert bench_trace.skipped_eager("llama", sizes, limit=2e9) == {
        n: float(bench_trace.eager_kept_bytes(n)) for n in (4096, 8192)
    }
    for model in ("minilm", "gpt2"):  # the default run never skips
        assert bench_trace.skipped_eager(model, bench_trace.FULL_TOKENS[model], limit=0) == {}


def test_repeats_default_per_model_and_the_flag_wins():
    assert bench_trace.repeats_for("llama", None, quick=False) == bench_trace.LLAMA_REPEATS == 3
    assert bench_trace.repeats_for("gpt2", None, quick=False) == 5
    assert bench_trace.repeats_for("llama", None, quick=True) == 2
    assert bench_trace.repeats_for("llama", 7, quick=False) == bench_trace.repeats_for("minilm", 7, quick=True) == 7
    assert bench_trace.DEFAULT_MODELS == "minilm,gpt2"


def test_tables_say_skipped_and_keep_the_ratios_where_eager_ran():
    sizes = (1024, 2048, 8192)
    skipped = {8192: 17.18e9}
    text = "\n".join(_tables("llama", _rows(sizes, skipped), sizes, skipped))
    assert text.count("skipped (would keep 17.2 GB)") == 2  # the time table and the memory table
    assert "| 2048 | 2.000 | 12.000 | 6.0× |" in text
    assert "| 8192 | 8.000 | skipped (would keep 17.2 GB) | – |" in text
    assert "| 8192 | 600 | skipped (would keep 17.2 GB) | – | 256 | 400.0 | – (17180 computed) |" in text


def test_the_default_models_tables_are_unchanged_without_skips():
    sizes = (128,)
    rows = {
        (128, "engine"): dict(median_s=0.171, head_median_s=0.0006, peak_mb=31, kept_mb=14.2),
        (128, "hf_eager_attn"): dict(median_s=0.167, peak_mb=28, kept_mb=9.4),
        (128, "hf_plain"): dict(median_s=0.181, peak_mb=17, kept_mb=0.0),
    }
    text = "\n".join(_tables("gpt2", rows, sizes))
    assert "| 128 | 0.171 | 0.167 | 1.0× | 0.181 | 0.94 | 0.6 |" in text
    assert "| 128 | 31 | 28 | 0.9× | 17 | 14.2 | 9.4 |" in text


def test_llama_reading_uses_the_longest_input_eager_ran_on_and_names_the_skipped():
    sizes = (1024, 2048, 4096, 8192)
    skipped = {8192: 17.18e9}
    lines = _llama_reading(_rows(sizes, skipped), sizes, skipped)
    assert len(lines) == 3
    assert lines[0].startswith("- At 4096 tokens, the longest input HF eager") and "(ratio 12.00)" in lines[0]
    assert lines[1].startswith("- At the longest input, 8192 tokens,") and "(+11%;" in lines[1]
    assert "8192 tokens: 17.2 GB" in lines[2]
    assert len(_llama_reading(_rows((1024,), {}), (1024,), {})) == 2  # nothing skipped: no third line


def test_llama_section_goes_after_the_trace_section_and_replaces_only_itself(tmp_path):
    doc = tmp_path / "B.md"
    doc.write_text(f"# Benchmarks\n\n{SECTION}\n\nminilm and gpt2 tables\n\n## Own checkpoints\n\nother\n")
    write_section(doc, f"{LLAMA_SECTION}\n\nllama 1\n", header=LLAMA_SECTION, after=SECTION)
    first = f"# Benchmarks\n\n{SECTION}\n\nminilm and gpt2 tables\n\n{LLAMA_SECTION}\n\nllama 1\n\n## Own checkpoints\n\nother\n"
    assert doc.read_text() == first
    write_section(doc, f"{LLAMA_SECTION}\n\nllama 2\n", header=LLAMA_SECTION, after=SECTION)
    assert doc.read_text() == first.replace("llama 1", "llama 2")
    write_section(doc, f"{SECTION}\n\nnew tables\n")  # the default run leaves the Llama section alone
    assert doc.read_text() == first.replace("llama 1", "llama 2").replace("minilm and gpt2 tables", "new tables")
    other = tmp_path / "C.md"  # no trace section yet: added at the end
    other.write_text("# Benchmarks\n\n## A\n\na\n")
    write_section(other, f"{LLAMA_SECTION}\n\nllama\n", header=LLAMA_SECTION, after=SECTION)
    assert other.read_text() == f"# Benchmarks\n\n## A\n\na\n\n{LLAMA_SECTION}\n\nllama\n"


def test_llama_section_text_is_computed_from_the_run():
    sizes = (1024, 8192)
    skipped = {8192: 17.18e9}
    lines = bench_trace._llama_section(
        _rows(sizes, skipped), sizes, skipped, 3, "VmHWM", "with a fixed threshold", ["- Command: `x`"]
    )
    text = "\n".join(lines)
    assert lines[0] == LLAMA_SECTION and "- Command: `x`" in text
    assert "8 layers, hidden size 512, 8 query heads and 2 key/value heads" in text
    assert "median of 3 calls" in text and "under 8 GB" in text and "Reading:" in text


def test_a_section_keeps_the_subsections_another_run_wrote(tmp_path):
    doc = tmp_path / "B.md"
    doc.write_text(
        "# Benchmarks\n\n## Class\n\nold table\n\n### Profile\n\nprofile table\n\n"
        "### One link\n\nlink table\n\n## Next\n\nnext\n"
    )
    write_section(doc, "## Class\n\nnew table\n")  # the plain run: its lead only, the subsections stay
    assert doc.read_text() == (
        "# Benchmarks\n\n## Class\n\nnew table\n\n### Profile\n\nprofile table\n\n"
        "### One link\n\nlink table\n\n## Next\n\nnext\n"
    )
    write_section(doc, "## Class\n\nnewer table\n\n### Profile\n\nnew profile\n")  # writes its own subsection
    assert doc.read_text() == (
        "# Benchmarks\n\n## Class\n\nnewer table\n\n### Profile\n\nnew profile\n\n"
        "### One link\n\nlink table\n\n## Next\n\nnext\n"
    )


def test_notes_written_by_hand_under_a_section_stay_when_it_is_rewritten(tmp_path):
    doc = tmp_path / "B.md"
    doc.write_text(
        f"# Benchmarks\n\n## Class\n\nold table\n\nReproduce: x\n\n{NOTES_MARK}\n\nWhy the morning was slower.\n\n"
        "### One link\n\nlink table\n\n## Next\n\nnext\n"
    )
    write_section(doc, "## Class\n\nnew table\n\nReproduce: x\n")
    assert doc.read_text() == (
        f"# Benchmarks\n\n## Class\n\nnew table\n\nReproduce: x\n\n{NOTES_MARK}\n\nWhy the morning was slower.\n\n"
        "### One link\n\nlink table\n\n## Next\n\nnext\n"
    )
    write_section(doc, "## Next\n\nnewer\n")  # another section: this one's notes untouched
    assert "Why the morning was slower." in doc.read_text() and "newer" in doc.read_text()


def test_notes_written_by_hand_under_a_subsection_stay_when_it_is_rewritten(tmp_path):
    from bench.trace_report import write_subsection

    doc = tmp_path / "B.md"
    doc.write_text(f"# Benchmarks\n\n## A\n\nplain a\n\n### S\n\nold s\n\n{NOTES_MARK}\n\nwhy s moved\n\n## B\n\nb\n")
    write_subsection(doc, "### S\n\nnew s\n", "## A")
    assert (
        doc.read_text()
        == f"# Benchmarks\n\n## A\n\nplain a\n\n### S\n\nnew s\n\n{NOTES_MARK}\n\nwhy s moved\n\n## B\n\nb\n"
    )
