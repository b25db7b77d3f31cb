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


def ngettext(singular: str, plural: str) -> tuple[str, str]:
    """Marks a count's message for ``jlpm i18n:extract`` (babel's ``ngettext:1,2``), as ``_`` marks one."""
    return singular, plural


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
    _("driver {size} (hard)"),
    _("MIG slice {profile}"),
    _("{shown} of {total} rows"),
    # The summary's cards.
    _("GPUs"),
    _("answering servers"),
    _("not answering"),
    _("not readable"),
    _("GPUs lost"),
    _("Kernels over budget"),
    _("Idle kernels holding memory"),
    _("{used}, {idle}"),  # a kernel's memory held and how long it has been idle
    _("Users by memory held"),
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

# The summary's counts: one message each, its form chosen by the count in the page (``tn`` in page.html).
PLURALS = (
    ngettext("{count} GPU", "{count} GPUs"),
    ngettext("{used} of {total} on {count} GPU", "{used} of {total} on {count} GPUs"),
    ngettext("{count} user", "{count} users"),
)

# The plural rules a catalogue's Plural-Forms may name (spaces left out), each with a count that picks each of its
# forms in turn; page.html's PLURAL_RULES holds the same rules as functions. Another rule reads English.
RULES = {"nplurals=1;plural=0;": (1,), "nplurals=2;plural=(n!=1);": (1, 2), "nplurals=2;plural=(n>1);": (1, 2)}


def words(language: str) -> dict[str, str]:
    """English message -> its words in ``language`` ("ja_JP"), for the messages its catalogue translates: the
    page shows the message itself for any other, as it does for English (an empty map)."""
    translation = i18n.translation(language)
    return {m: w for m in MESSAGES if (w := translation.gettext(m)) != m}


def plurals(language: str) -> dict[str, object]:
    """The counts' words in ``language`` for the page: its catalogue's plural rule, and singular -> its forms in the
    rule's order for the messages the catalogue translates; ``{}`` for English or a rule the page does not know, so
    the page words every count in English (``1 user``, ``2 users``)."""
    translation = i18n.translation(language)
    rule = translation.info().get("plural-forms", "").replace(" ", "")
    if rule not in RULES:
        return {}
    forms = {
        singular: [translation.ngettext(singular, plural, n) for n in RULES[rule]]
        for singular, plural in PLURALS
        if (translation.ngettext(singular, plural, 1), translation.ngettext(singular, plural, 2)) != (singular, plural)
    }
    return {"rule": rule, "forms": forms}
