"""README's two results tables are what their generators make from the committed records (issue 57): the scene table
from its defaults invocation (``python -m bench defaults --report-only --update-readme``), the MuJoCo table from its
records folder (``python -m bench gym --report-only --update-readme``).  Editing a table by hand, or records that no
longer give it, fails here."""
import json
import os
import re

from bench import gym
from bench.learn import read_runs
from bench.report import RESULTS_BEGIN, RESULTS_END, results_block

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _readme_block(begin: str, end: str) -> str:
    with open(os.path.join(REPO, "README.md")) as f:
        text = f.read()
    return text[text.index(begin):text.index(end) + len(end)]


def _report_folder(block: str) -> str:
    links = re.findall(r"\[report\]\((bench/results/[^)]+)/REPORT\.md\)", block)
    assert len(links) == 1, links
    return os.path.join(REPO, links[0])


def test_scene_table_is_its_invocations_block():
    block = _readme_block(RESULTS_BEGIN, RESULTS_END)
    out = _report_folder(block)
    with open(os.path.join(out, "invocation.json")) as f:
        inv = json.load(f)
    assert inv["kind"] == "defaults" and inv.get("finished") and not (inv.get("plan_options") or {}).get("overrides")
    link = os.path.relpath(os.path.join(out, "REPORT.md"), REPO)
    assert block == results_block(read_runs(out), inv["environment"], report_link=link)


def test_mujoco_table_is_its_records_block():
    block = _readme_block(gym.GYM_BEGIN, gym.GYM_END)
    out = _report_folder(block)
    records = gym.resume.read_records(out)[0]
    link = os.path.relpath(os.path.join(out, "REPORT.md"), REPO)
    kinds = sorted({str(r.get("machine_kind")) for r in records if r.get("machine_kind")})
    made = {kind: gym.readme_block(records, 100000, link, kind) for kind in kinds}  # --speed-kind chooses one
    assert block in made.values(), "README's MuJoCo table is none of " + ", ".join(kinds)
