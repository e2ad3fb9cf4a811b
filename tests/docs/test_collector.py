"""The docs examples' collector itself: the convention's markers, and that a broken example
fails naming its page and line (a collector that passed everything would let the docs rot)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from tests.docs.blocks import ConventionError, parse_page
from tests.docs.page_services import REDIS_DBS
from tests.docs.runner import ExampleFailed, run_page

FENCE = "```"


def page(text: str, path: str = "synthetic.md") -> object:
    return parse_page(path, textwrap.dedent(text).replace("'''", FENCE))


def test_markers_bind_to_the_next_block_and_data_blocks_never_run():
    parsed = page("""\
        <!-- services: postgres redis -->
        # Title

        <!-- file: mysite/settings.py -->

        '''python
        DEBUG = True
        '''

        <!-- no-run: starts a server that runs until Ctrl-C -->
        '''sh
        python manage.py runserver
        '''

        !!! note
            '''python
            x = 1
            '''

        '''console
        $ ls
        '''
        """)
    assert parsed.services == ("postgres", "redis")  # type: ignore[attr-defined]
    blocks = parsed.blocks  # type: ignore[attr-defined]
    assert [(b.lang, b.file, b.skip is not None, b.runs) for b in blocks] == [
        ("python", "mysite/settings.py", False, False), ("sh", None, True, False),
        ("python", None, False, True), ("console", None, False, False)]
    assert blocks[0].line == 6 and blocks[0].code == "DEBUG = True\n"
    assert blocks[2].code == "x = 1\n"  # the admonition's indentation is removed


@pytest.mark.parametrize(("text", "message"), [
    ("<!-- no-run: -->\n'''sh\nls\n'''\n", "needs a reason"),
    ("<!-- no-run: why -->\n'''text\nls\n'''\n", "only applies to"),
    ("'''bash\nls\n'''\n", "```bash is ambiguous"),
    ("'''py\nx = 1\n'''\n", "```py is ambiguous"),
    ("# Title\n<!-- services: postgres -->\n", "first line"),
    ("<!-- services: mysql -->\n", "not 'mysql'"),
    ("<!-- file: ../escape.py -->\n'''python\nx = 1\n'''\n", "relative path inside"),
    ("<!-- file: a.py -->\nSome prose.\n'''python\nx = 1\n'''\n", "right before its block"),
    ("<!-- file: a.py -->\n", "not followed by a block"),
    ("'''python\nx = 1\n", "never closed"),
    ("<!-- norun: starts a server -->\n'''sh\nls\n'''\n", "unknown marker <!-- norun: -->"),
])
def test_convention_errors_name_the_page_and_line(text: str, message: str):
    with pytest.raises(ConventionError, match=r"^docs/bad\.md:[0-9]+: ") as caught:
        page(text, "bad.md")
    assert message in str(caught.value)


def test_blocks_share_one_session_files_and_shell_see_each_other(tmp_path: Path):
    parsed = page("""\
        <!-- file: app/tasks.py -->
        '''python
        def double(x):
            return 2 * x
        '''

        '''python
        import os
        from app.tasks import double
        seen = double(21)
        '''

        '''sh
        test "$(cat app/tasks.py | head -n 1)" = "def double(x):"
        python -c 'import sys; print(sys.prefix)' > prefix.txt
        echo "from sh" > note.txt
        '''

        '''python
        assert seen == 42
        assert open("note.txt").read() == "from sh\\n"
        assert os.getcwd().endswith("page")
        '''
        """)
    outcome = run_page(parsed, tmp_path)  # type: ignore[arg-type]
    assert (outcome.python, outcome.sh, outcome.files, outcome.skipped) == (2, 1, 1, [])
    prefix = (tmp_path / "page" / "prefix.txt").read_text().strip()
    assert Path(prefix).name == ".venv" or prefix.endswith("venv")  # the repository's .venv comes first


def test_a_failing_python_block_names_the_page_line_and_shows_its_output(tmp_path: Path):
    parsed = page("""\
        # Page

        '''python
        print("before the failure")
        total = 1 + 1
        assert total == 3, "arithmetic"
        '''

        '''python
        raise SystemExit("never reached")
        '''
        """, "how-to/broken.md")
    with pytest.raises(ExampleFailed) as caught:
        run_page(parsed, tmp_path)  # type: ignore[arg-type]
    message = str(caught.value)
    assert message.startswith("docs/how-to/broken.md:3: the ```python block failed")
    assert 'broken.md", line 6' in message and "AssertionError: arithmetic" in message
    assert "before the failure" in message and "never reached" not in message


def test_a_failing_sh_block_names_the_failing_line(tmp_path: Path):
    parsed = page("""\
        '''sh
        echo fine
        false
        echo "not reached"
        '''
        """, "broken-sh.md")
    with pytest.raises(ExampleFailed) as caught:
        run_page(parsed, tmp_path)  # type: ignore[arg-type]
    message = str(caught.value)
    assert message.startswith("docs/broken-sh.md:1: the ```sh block failed")
    assert "failed at docs/broken-sh.md:3: false" in message and "not reached" not in message


def test_a_block_that_never_ends_times_out(tmp_path: Path):
    parsed = page("""\
        '''python
        import time
        time.sleep(60)
        '''
        """)
    with pytest.raises(ExampleFailed, match="timed out after 1 s"):
        run_page(parsed, tmp_path, timeout=1.0)  # type: ignore[arg-type]


def test_the_callers_configuration_does_not_leak_into_a_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OQRON_MODE", "redis")
    monkeypatch.setenv("DATABASE_URL", "postgresql://elsewhere/db")
    parsed = page("""\
        '''python
        import os
        assert not [k for k in os.environ if k.startswith("OQRON_")]
        assert "DATABASE_URL" not in os.environ and "DJANGO_SETTINGS_MODULE" not in os.environ
        '''

        <!-- no-run: shows a server that runs until Ctrl-C -->
        '''sh
        sleep infinity
        '''
        """)
    outcome = run_page(parsed, tmp_path)  # type: ignore[arg-type]
    assert outcome.skipped == [("docs/synthetic.md:8", "shows a server that runs until Ctrl-C")]


def test_a_services_page_gets_its_own_database_and_redis_number(tmp_path: Path):
    parsed = page("""\
        <!-- services: postgres redis -->
        '''python
        import os, psycopg, redis
        with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
            conn.execute("CREATE TABLE mine (x int)")
            name = conn.execute("SELECT current_database()").fetchone()[0]
        open("db.txt", "w").write(name + " " + os.environ["REDIS_URL"])
        redis.Redis.from_url(os.environ["REDIS_URL"]).set("example-key", "1")
        '''
        """)
    run_page(parsed, tmp_path)  # type: ignore[arg-type]
    name, redis_url = (tmp_path / "page" / "db.txt").read_text().split()
    assert name.startswith("oqron_docs_") and int(redis_url.rsplit("/", 1)[1]) in REDIS_DBS

    import psycopg
    import redis

    from tests.services import POSTGRES_URL

    with psycopg.connect(POSTGRES_URL) as conn:
        assert conn.execute("SELECT count(*) FROM pg_database WHERE datname = %s", (name,)).fetchone() == (0,)
    client = redis.Redis.from_url(redis_url)
    try:
        assert client.get("example-key") is None  # the page's keys go with it
    finally:
        client.close()
    assert "DATABASE_URL" not in os.environ
