"""The documentation holds together: every relative link (and every ``#anchor`` into a markdown file) in README.md,
CHANGELOG.md, docs/*.md and bench/results/README.md resolves, and the front page and the reference docs stay short
(README.md at most 12 KB, every docs/*.md at most 15 KB; a KB counted as 1,000 bytes, the stricter reading)."""
import glob
import os
import re
from typing import Dict, Iterator, List, Set, Tuple

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README_MAX_BYTES = 12_000
DOC_MAX_BYTES = 15_000

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target) and ![alt](target); the target ends at whitespace (an optional "title" follows) or ")".
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def documented_files() -> List[str]:
    """The markdown files whose links are checked."""
    files = [os.path.join(REPO, "README.md"), os.path.join(REPO, "CHANGELOG.md"),
             os.path.join(REPO, "bench", "results", "README.md")]
    files += sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))
    return files


def _prose_lines(text: str) -> Iterator[Tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code spans blanked out."""
    in_fence = False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            yield number, INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)


def links(text: str) -> List[Tuple[int, str]]:
    """Every link target in a markdown text, with its line number (inline links, images and reference definitions)."""
    found = []
    for number, line in _prose_lines(text):
        found += [(number, m.group(1)) for m in INLINE_LINK.finditer(line)]
        ref = REFERENCE_DEF.match(line)
        if ref:
            found.append((number, ref.group(1)))
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: inline markup dropped, lower case, punctuation removed, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> Set[str]:
    """The anchors a markdown text defines: one per heading, with -1, -2, ... on repeats (as GitHub numbers them)."""
    seen: Dict[str, int] = {}
    result = set()
    in_fence = False
    for line in text.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        heading = None if in_fence else HEADING.match(line)
        if heading:
            base = slug(heading.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            result.add(base if count == 0 else f"{base}-{count}")
    return result


def broken_links(path: str) -> List[str]:
    """Messages for the links of one markdown file that do not resolve."""
    text = open(path, encoding="utf-8").read()
    problems = []
    for number, target in links(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, https:, mailto:, ...
            continue
        file_part, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        where = f"{os.path.relpath(path, REPO)}:{number}: {target}"
        if not os.path.exists(resolved):
            problems.append(f"{where}: {os.path.relpath(resolved, REPO)} does not exist")
            continue
        if anchor and resolved.endswith(".md"):
            if anchor not in anchors(open(resolved, encoding="utf-8").read()):
                problems.append(f"{where}: no heading gives #{anchor} in {os.path.relpath(resolved, REPO)}")
    return problems


@pytest.mark.parametrize("path", documented_files(), ids=lambda p: os.path.relpath(p, REPO))
def test_every_relative_link_resolves(path):
    assert os.path.exists(path), f"{os.path.relpath(path, REPO)} is missing"
    assert broken_links(path) == []


def test_readme_is_a_front_page():
    size = os.path.getsize(os.path.join(REPO, "README.md"))
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes, the front page's limit is {README_MAX_BYTES}"


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(REPO, "docs", "*.md"))),
                         ids=lambda p: os.path.relpath(p, REPO))
def test_each_doc_is_reference_sized(path):
    size = os.path.getsize(path)
    assert size <= DOC_MAX_BYTES, f"{os.path.relpath(path, REPO)} is {size} bytes, a doc's limit is {DOC_MAX_BYTES}"


def test_the_checker_finds_broken_links_and_anchors(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## A `code` heading, with punctuation!\n\n## Twice\n\n## Twice\n")
    (tmp_path / "page.md").write_text(
        "# Page\n\n"
        "[ok](other.md) [ok anchor](other.md#a-code-heading-with-punctuation) [second](other.md#twice-1)\n"
        "[self](#page) [web](https://example.com/missing) ![img](other.md)\n"
        "[missing file](nowhere.md) [missing anchor](other.md#no-such-heading) [missing self](#nope)\n"
        "`[not a link](inside-code.md)`\n"
        "```\n[not a link either](inside-fence.md)\n```\n"
        "[ref]: missing-ref.md\n"
    )
    problems = broken_links(str(tmp_path / "page.md"))
    assert len(problems) == 4, problems
    for expected in ("nowhere.md does not exist", "#no-such-heading", "#nope", "missing-ref.md does not exist"):
        assert any(expected in p for p in problems), (expected, problems)


def test_slugs_follow_githubs_rule():
    assert slug("Settings (`hyperparameters:`)") == "settings-hyperparameters"
    assert slug("Variants, and the tuning / validation split") == "variants-and-the-tuning--validation-split"
    assert slug("`rl_gradient_to_repr` with discrete actions") == "rl_gradient_to_repr-with-discrete-actions"
    assert slug("[0.2.0] - unreleased") == "020---unreleased"
