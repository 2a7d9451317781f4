"""The template format of the SQL files (rota.store.sql_template) and the statements
composed with it: every placeholder filled, none left over, checked as a statement loads.
No server."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from rota.store.sql_base import SqlFiles
from rota.store.sql_template import TemplateError, fill, placeholders, split_parts
from rota.store.sqlite import schema as sqlite_schema


def test_fill_replaces_placeholders_and_those_inside_values() -> None:
    assert fill("SELECT {what} FROM t WHERE {cond}", {
        "what": "a", "cond": "b > {limit}", "limit": "3"}, what="t") == (
        "SELECT a FROM t WHERE b > 3")
    # Those named `later` stay for their own step; psycopg's escaped braces are no placeholder
    assert fill("{schema}.jobs, '{{}}', {x}", {"x": "1"}, later={"schema"}, what="t") == (
        "{schema}.jobs, '{{}}', 1")
    assert placeholders("{a} {b} {{c}} {a}") == {"a", "b"}


def test_fill_refuses_a_missing_or_unused_value() -> None:
    with pytest.raises(TemplateError, match=r"t: the placeholder \{cond\} has no value"):
        fill("WHERE {cond}", {}, what="t")
    with pytest.raises(TemplateError, match="t: no placeholder takes the value of extra"):
        fill("WHERE {cond}", {"cond": "true", "extra": "1"}, what="t")
    # A value that only a later step would use is unused too
    with pytest.raises(TemplateError, match="no placeholder takes the value of schema"):
        fill("SELECT 1", {"schema": "s"}, later={"schema"}, what="t")
    with pytest.raises(TemplateError, match="nested deeper"):
        fill("{a}", {"a": "{a}"}, what="t")


def test_parts_split_on_their_lines_without_comments() -> None:
    text = ("-- the statement\nSELECT {x}\n\n-- @part x\n-- its doc, {braces} free\n"
            "1 +\n2\n")
    assert split_parts(text, "f") == {"": "SELECT {x}", "x": "1 +\n2"}
    with pytest.raises(TemplateError, match="'-- @prat y' is not a part line"):
        split_parts("SELECT 1\n-- @prat y\n2\n", "f")
    with pytest.raises(TemplateError, match="the part y is there twice"):
        split_parts("SELECT 1\n-- @part y\n2\n-- @part y\n3\n", "f")


def misspelt(dialect: str, composed: Mapping[str, Callable[[SqlFiles], str]],
             later: set[str], old: str, new: str) -> SqlFiles:
    """A dialect's files with `old` in them written `new`, as a slip in an edit would
    leave them."""
    files = SqlFiles(dialect, "no migrations", lambda script: [script], composed=composed,
                     later=later)
    real = files.text
    files.text = lambda name: real(name).replace(old, new)  # type: ignore[method-assign]
    return files


def _once(files: SqlFiles, composed: Mapping[str, object]) -> None:
    """The room rule (a limit less the jobs leased) is in no statement file but claim.sql."""
    assert not [name for name in files.names() if name not in composed
                and "concurrency_limit -" in files.text(name)]


def _loads_every_statement(files: SqlFiles, load: Callable[[str], str]) -> None:
    names = files.names()
    assert names
    for name in names:
        assert load(name).strip(), name


def test_every_sqlite_statement_loads_and_a_misspelt_placeholder_raises_as_it_loads() -> None:
    files = sqlite_schema.FILES
    _loads_every_statement(files, files.statement)
    assert {"claim", "claim_ones", "claim_many", "claim_many_arm"} <= set(files.names())
    _once(files, sqlite_schema.COMPOSED)
    slipped = misspelt("sqlite", sqlite_schema.CLAIMS, {"rows"}, "LIMIT {take}",
                       "LIMIT {takes}")
    with pytest.raises(TemplateError, match=r"claim.sql as claim: the placeholder \{takes\}"):
        slipped.statement("claim")


def test_every_postgres_statement_loads_under_the_cache_limit_and_misspelt_raises() -> None:
    pytest.importorskip("psycopg")
    from rota.store.postgres import schema

    files = schema.FILES
    _loads_every_statement(files, lambda name: schema.render_sql(name, "rota"))
    # Composed, the claims stay within psycopg's 4,096 bytes (schema.py `_sql_text`)
    for name in schema.CLAIMS:
        assert len(schema.render_sql(name, "rota").encode()) <= 4096, name
    # A misspelt placeholder is caught when the statement loads: the value it should take
    # is unused, the placeholder has none
    _once(files, schema.COMPOSED)
    later = set(schema.RENDERED)
    slipped = misspelt("postgres", schema.CLAIMS, later, "{completed_guard}",
                       "{completing_guard}")
    for name in ("claim", "claim_completing"):
        with pytest.raises(TemplateError, match=r"the placeholder \{completing_guard\}"):
            slipped.statement(name)
    # claim_limited has no guard, so it still loads
    assert "requested AS" in slipped.statement("claim_limited")
    # A placeholder lost: the value meant for it is unused
    lost = misspelt("postgres", schema.CLAIMS, later, "{limited_row}", "")
    with pytest.raises(TemplateError, match="no placeholder takes the value of limited_row"):
        lost.statement("claim")
