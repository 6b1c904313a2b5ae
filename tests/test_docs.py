"""README stays a short front door and loses no figure to docs/ (issue 51, item 1).

The figures the README held before it was cut down (tests/fixtures/readme_figures.txt, written once by
``python tests/test_docs.py --write-fixture OLD_README``) must each still appear in README.md or docs/*.md.
A figure is a number as the text writes it: with a decimal point, a thousands separator, an exponent or a
unit (%, ms, s, MB, ...), or an integer of two digits or more; thousands separators are dropped and a unit is
kept with its number ("1,548 s" -> "1548s"), so "0.89" is not found inside "0.8921".
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
FIXTURE = ROOT / "tests" / "fixtures" / "readme_figures.txt"
DOCS_FILES = ("models.md", "checkpoints.md", "serving.md", "benchmarks.md", "lesson.md", "architecture.md")
COMMANDS = (
    "python -m pip install -r requirements.txt && python -m streamlit run streamlit_app.py",
    "bash scripts/test.sh",
)
UNITS = "%|ms|µs|s|MB|GB|KB|kB|min|px|×"
FIGURE = re.compile(
    r"(?<![\w.,])"  # not the tail of an identifier, a version or a longer number
    r"(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<dec>\.\d+)?(?P<exp>e-?\d+)?"
    r"(?!\.\d)"  # not the head of a version (0.25.0)
    r"(?:(?P<unit>\s?(?:" + UNITS + r"))(?!\w)|(?!\w))"
)


def figures(text: str) -> set[str]:
    """Every figure in ``text``, normalised (see the module's docstring)."""
    found = set()
    for match in FIGURE.finditer(text):
        integer, decimals, exponent = match["int"], match["dec"] or "", match["exp"] or ""
        unit = (match["unit"] or "").strip()
        if not (decimals or exponent or unit or "," in integer or len(integer) >= 2):
            continue
        found.add(integer.replace(",", "") + decimals + exponent + unit)
    return found


def documented_text() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in [README, *sorted(DOCS.glob("*.md"))])


def missing_figures(expected: set[str], text: str) -> list[str]:
    return sorted(expected - figures(text))


def fixture_figures() -> set[str]:
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    return {line for line in lines if line and not line.startswith("#")}


def code_blocks(markdown: str) -> list[str]:
    return [block.strip() for block in re.findall(r"^```[^\n]*\n(.*?)^```", markdown, flags=re.S | re.M)]


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    body = re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)
    seen: dict[str, int] = {}
    result = set()
    for heading in re.findall(r"^#{1,6} (.+)$", body, flags=re.M):
        base = anchor(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def local_links(path: Path) -> list[tuple[Path, str]]:
    """(target file, anchor) of every relative link in a Markdown file."""
    text = path.read_text(encoding="utf-8")
    body = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    links = []
    for target in re.findall(r"\]\(([^)\s]+)\)", body):
        if re.match(r"[a-z]+:", target):
            continue
        file_part, _, fragment = target.partition("#")
        links.append(((path.parent / file_part).resolve() if file_part else path, fragment))
    return links


def test_the_figure_reader_keeps_numbers_as_written():
    text = "1,548 s (25.8 min); test 0.8921 at 1e-5; d_model 64, 8×8 px; mlxtend 0.25.0, commit fffe305, 3 runs"
    assert figures(text) == {"1548s", "25.8min", "0.8921", "1e-5", "64", "8px"}
    assert missing_figures({"0.89"}, "test 0.8921") == ["0.89"]


def test_every_figure_the_readme_had_is_still_in_readme_or_docs():
    expected = fixture_figures()
    assert len(expected) > 1000, "the fixture holds the old README's figures"
    missing = missing_figures(expected, documented_text())
    assert not missing, f"{len(missing)} figures of the old README are in neither README.md nor docs/: {missing[:40]}"


def test_a_removed_figure_is_noticed():
    text = documented_text()
    figure = "0.8921"
    assert figure in fixture_figures()
    assert missing_figures({figure}, text.replace(figure, "")) == [figure]


def test_readme_fits_on_a_few_screens():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines"


def test_readme_starts_with_the_two_commands():
    assert code_blocks(README.read_text(encoding="utf-8"))[:2] == list(COMMANDS)


def test_readme_links_every_docs_file_and_every_link_resolves():
    readme_links = local_links(README)
    for name in DOCS_FILES:
        assert (DOCS / name).resolve() in {target for target, _ in readme_links}, f"README does not link docs/{name}"
    for source in [README, *sorted(DOCS.glob("*.md"))]:
        for target, fragment in local_links(source):
            assert target.exists(), f"{source.name} links {target}, which does not exist"
            if fragment and target.suffix == ".md":
                assert fragment in anchors(target.read_text(encoding="utf-8")), (
                    f"{source.name} links {target.name}#{fragment}, which has no such heading"
                )


if __name__ == "__main__" and sys.argv[1:2] == ["--write-fixture"]:
    old = Path(sys.argv[2]).read_text(encoding="utf-8")
    header = "# Figures of README.md before issue 51 cut it down (python tests/test_docs.py --write-fixture OLD_README)"
    FIXTURE.write_text("\n".join([header, *sorted(figures(old))]) + "\n", encoding="utf-8")
