"""Polish: every command has help, hints and warnings name flags that exist, the headers carry
the current product name, and losses are labelled as losses (not "World model")."""

from __future__ import annotations

from typing import Any

import pytest

from tau.portal.cli import build_app
from tau.portal.store.cards import CARD_ORDER, card_of
from tests.portal_web_support import demo_source


def commands(app: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    out = []
    for name in sorted(app._commands):  # cyclopts keeps its subcommands here
        if name.startswith("-"):
            continue
        sub = app[name]
        out.append(((*path, name), sub))
        out += commands(sub, (*path, name))
    return out


def test_every_command_has_help() -> None:
    found = commands(build_app())
    assert len(found) > 20
    empty = [" ".join(p) for p, sub in found if not (sub.help or "").strip()]
    assert empty == []


def test_the_group_listing_shows_the_lazy_commands_help(capsys: pytest.CaptureFixture[str]) -> None:
    from tau.portal.cli import main

    assert main(["experiment", "--help"]) == 0
    out = capsys.readouterr().out
    for line in ("Render the Stellar dashboard", "Write a deterministic SVG", "Serve Stellar"):
        assert line in out


def test_the_non_loopback_warning_names_allowed_host() -> None:
    from tau.portal.web.server import Address, warning_for

    warning = warning_for(Address("0.0.0.0", 8080))
    assert warning is not None and "--allowed-host" in warning


def test_no_hint_names_a_kusto_flag_that_does_not_exist() -> None:
    from tau.portal.web.boards import KUSTO_REASON, KUSTO_WARNING

    assert "--kusto" not in KUSTO_WARNING and "--kusto" not in KUSTO_REASON


def test_the_headers_carry_the_product_name(tmp_path: Any) -> None:
    from tau.portal.stellar import html, snapshot

    source = demo_source(tmp_path)
    doc = snapshot.build(
        source.evidence("exp", max_runs=10), now=snapshot.datetime(2026, 1, 1, tzinfo=snapshot.UTC)
    )
    page = html.stellar_page(doc)
    assert "<h1>Stellar <span" in page and "taugrid-portal" in page
    assert "Tau experiment Stellar" not in page
    assert snapshot.SCHEMA_VERSION not in page.split("</header>")[0]  # no schema name up top
    landing = html.render("landing.html.j2", store_path="/s", experiments=[])
    assert "taugrid-portal" in landing and "Tau experiment Stellar" not in landing


@pytest.mark.parametrize(
    ("name", "card"),
    [
        ("train/loss", "Loss"),
        ("eval/loss", "Loss"),
        ("val/cross_entropy", "Loss"),
        ("train/perplexity", "Loss"),
        ("wm/loss", "World model"),
        ("world_model/perplexity", "World model"),
        ("eval/accuracy", "Outcome"),
    ],
)
def test_losses_are_labelled_as_losses(name: str, card: str) -> None:
    assert card_of(name) == card
    assert card in CARD_ORDER
