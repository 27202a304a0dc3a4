"""The repository block read from a repository's own files, and the Project root checks on
descriptors (no exception for a sticky parent)."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from maia.config import canonical_root, normalize_remote, parse_git_config, read_repository
from maia.protocol import MaiaError


def _repo(root: Path, config: str, head: str = "ref: refs/heads/main\n") -> None:
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text(config)
    (root / ".git" / "HEAD").write_text(head)


@pytest.mark.parametrize(
    ("url", "normalized"),
    [
        ("git@github.com:Org/App.git", "github.com/Org/App"),
        ("https://github.com/Org/App", "github.com/Org/App"),
        ("https://user@GitHub.com/Org/App.git/", "github.com/Org/App"),
        ("ssh://git@github.com/Org/App.git", "github.com/Org/App"),
        ("/srv/git/app.git", "file:///srv/git/app"),
        ("file:///srv/git/app.git", "file:///srv/git/app"),
    ],
)
def test_remotes_normalize_to_one_spelling(url: str, normalized: str) -> None:
    """Scheme, user, host case, .git and trailing slashes do not make another remote."""
    assert normalize_remote(url) == normalized


def test_git_config_sections_keys_and_quotes() -> None:
    """Sections with subsections, case-insensitive keys, quotes and comments are read."""
    text = """
    # a comment
    [core]
        repositoryformatversion = 1
    [remote "origin"]
        URL = "git@example.com:a/b.git" ; trailing comment
    [extensions]
        objectFormat = sha256
    """
    sections = parse_git_config(text)
    assert sections[("remote", "origin")]["url"] == "git@example.com:a/b.git"
    assert sections[("extensions", None)]["objectformat"] == "sha256"


def test_repository_block_from_files(tmp_path: Path) -> None:
    """origin's URL, the sha256 object format and HEAD's branch make the block."""
    _repo(
        tmp_path,
        '[remote "up"]\n url = https://x.org/u/v\n[remote "origin"]\n'
        " url = git@github.com:Org/App.git\n[extensions]\n objectformat = sha256\n",
    )
    block = read_repository(tmp_path)
    assert block is not None
    assert block.to_json() == {
        "normalizedRemote": "github.com/Org/App",
        "objectFormat": "sha256",
        "expectedHead": "refs/heads/main",
    }


def test_detached_head_and_no_remote(tmp_path: Path) -> None:
    """A detached HEAD is its commit; no remote identifies the repository by its root."""
    _repo(tmp_path, "[core]\n bare = false\n", "a" * 40 + "\n")
    block = read_repository(tmp_path)
    assert block is not None
    assert (block.normalized_remote, block.object_format, block.expected_head) == (
        f"local:{tmp_path}",
        "sha1",
        "a" * 40,
    )


def test_worktree_gitdir_file_uses_the_common_config(tmp_path: Path) -> None:
    """A .git file (worktree) leads to its git dir's HEAD and the common dir's config."""
    _repo(tmp_path / "main", '[remote "origin"]\n url = https://h.org/o/r.git\n')
    worktree_dir = tmp_path / "main" / ".git" / "worktrees" / "wt"
    worktree_dir.mkdir(parents=True)
    (worktree_dir / "HEAD").write_text("ref: refs/heads/feature\n")
    (worktree_dir / "commondir").write_text("../..\n")
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / ".git").write_text(f"gitdir: {worktree_dir}\n")
    block = read_repository(tmp_path / "wt")
    assert block is not None
    assert (block.normalized_remote, block.expected_head) == ("h.org/o/r", "refs/heads/feature")


def test_root_in_a_sticky_shared_folder_is_refused() -> None:
    """A root whose parent is the system temporary folder (sticky, world-writable) is
    refused, and the message says why."""
    shared = Path(tempfile.gettempdir())
    if not shared.stat().st_mode & stat.S_ISVTX or not shared.stat().st_mode & 0o002:
        pytest.skip(f"{shared} is not a sticky shared folder here")
    root = Path(tempfile.mkdtemp(prefix="maia-root-"))
    try:
        with pytest.raises(MaiaError) as caught:
            canonical_root(str(root))
        assert caught.value.code == "configuration_invalid"
        assert "writable by group or others" in caught.value.message
        assert "sticky" in caught.value.message
    finally:
        os.rmdir(root)


def test_root_owned_by_descriptor_checks_pass_in_a_private_folder(tmp_path: Path) -> None:
    """The same root under a private 0700 folder is accepted, with its repository block."""
    folder = tmp_path / "work"
    folder.mkdir(mode=0o700)
    _repo(folder / "app", '[remote "origin"]\n url = https://h.org/o/r\n')
    root = canonical_root(str(folder / "app"))
    assert root.workspace_kind == "repository"
    assert root.repository is not None
    assert root.repository.identity == "h.org/o/r refs/heads/main"


@given(text=st.text(max_size=400))
def test_git_config_parser_never_crashes(text: str) -> None:
    """Any text parses into sections (a broken config is not a crash)."""
    sections = parse_git_config(text)
    assert all(isinstance(body, dict) for body in sections.values())


@given(url=st.text(max_size=120))
@example(url="a/.git/")
@example(url="https://h/a/.git")
@example(url="x.git.git")
def test_normalize_remote_is_total(url: str) -> None:
    """Any URL text normalizes without raising, to a host path or a file:// URL with no
    trailing slash or .git."""
    normalized = normalize_remote(url)
    assert not normalized.endswith((".git", "/")) or normalized == "file:///"


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/Org/App\n",
        "git@github.com:Org/App.git\n",
        "ssh://git@github.com/Org/App.git\n",
    ],
)
def test_remote_with_a_final_newline_is_the_same_remote(url: str) -> None:
    """A final newline (what `$` lets through in `re.match`) makes no other remote: the
    URL is stripped, and the patterns match the whole text, never a prefix before `\\n`."""
    assert normalize_remote(url) == "github.com/Org/App"


def test_remote_url_escaped_newline_in_git_config(tmp_path: Path) -> None:
    """`url = "https://h.org/o/r\\n"` (git's escape for a newline) reads as h.org/o/r."""
    _repo(tmp_path, '[remote "origin"]\n url = "https://h.org/o/r\\n"\n')
    block = read_repository(tmp_path)
    assert block is not None
    assert block.normalized_remote == "h.org/o/r"


@pytest.mark.parametrize("url", ["https://h.org/o/r\nx", "git@h.org:o/r\nx", "ssh://h.org/o\n/r"])
def test_remote_with_an_inner_newline_is_not_a_host_path(url: str) -> None:
    """A newline inside the URL is no scheme or scp URL: it stays a file:// path, a remote
    of its own, never shortened to the host path before the newline."""
    normalized = normalize_remote(url)
    assert normalized.startswith("file://")
    assert "\n" in normalized
