"""The admin page's own words (page.html: headings, column headers, the summary's and the state line's sentences,
the filter's placeholder and label), in the ``jupyter_gpumem`` gettext domain every surface words through.

``_`` only marks a message for ``jlpm i18n:extract`` (babel's Python extractor finds ``_("…")`` literals); the words
of a language are looked up per page by ``words(language)``. A message is its English words: ``{name}`` is a value
the page puts in (a number or a time, as it is: figures and units never change), so a translation keeps it.
"""

from __future__ import annotations

from jupyter_gpumem import i18n


def _(message: str) -> str:
    return message


MESSAGES = (
    _("GPU memory by user"),
    _("Not read yet."),
    _("Filter: user, server, kernel, problem"),
    _("Filter rows"),
    # The table's columns, and what their cells say besides figures.
    _("User"),
    _("Server"),
    _("Kernel"),
    _("GPU"),
    _("Used"),
    _("Budget"),
    _("Over budget"),
    _("Ceiling"),
    _("Limit"),
    _("Idle for"),
    _("Note"),
    _("(default)"),
    _("yes"),
    _("no"),
    _("{kind} (hard)"),
    _("{shown} of {total} rows"),
    # The summary's cards.
    _("GPUs"),
    _("answering servers"),
    _("not answering"),
    _("not readable"),
    _("GPUs lost"),
    _("{count} GPUs"),
    _("{used} of {total} on {count} GPUs"),
    _("Kernels over budget"),
    _("Idle kernels holding memory"),
    _("Users by memory held"),
    _("{count} users"),
    _("Servers by release"),
    _("not said"),
    _("{kernel} (stale)"),
    # The state line at the top.
    _("Read at {time}; updated every {period} s."),
    _("Read at {time}: {poll}; updated every {period} s."),
    _("{answered} of {servers} servers answered ({duration} s)"),
    _("{answered} of {servers} servers scraped by Prometheus ({duration} s)"),
    _("{poll}, {failing} not answering"),
    _("{poll}, {failing} not scraped"),
    _("The service answered {status}; reload the page to log in again."),
    _("The service did not answer ({error}); trying again."),
)


def words(language: str) -> dict[str, str]:
    """English message -> its words in ``language`` ("ja_JP"), for the messages its catalogue translates: the
    page shows the message itself for any other, as it does for English (an empty map)."""
    translation = i18n.translation(language)
    return {m: w for m in MESSAGES if (w := translation.gettext(m)) != m}
