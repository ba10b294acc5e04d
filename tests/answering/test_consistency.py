"""Claims that keep a source's words and change its meaning, and paraphrases that must not be caught.

The sources are from git's documentation as Debian's git-doc ships it; none of these claims is
in the bench sets.
"""

from __future__ import annotations

import pytest

from sourcebook.answering.consistency import contradiction

CACHE = ("This command caches credentials in memory for use by future Git programs. The stored credentials "
         "never touch the disk, and are forgotten after a configurable timeout. --timeout <seconds>: Number "
         "of seconds to cache credentials (default: 900).")
GC = ("Usually git gc runs very quickly while providing good disk space utilization and performance. "
      "--prune=<date>: Prune loose objects older than date (default is 2 weeks ago, overridable by the "
      "config variable gc.pruneExpire).")
BUFFER = ("If the data is larger than this size, libcurl, which handles the HTTP support for Git, will use "
          "chunked transfer encoding since it isn't known ahead of time what the size of the pushed data will be.")
FETCH = ("Remote-tracking branches are updated. By default, any tag that points into the histories being "
         "fetched is also fetched. The cache manager does not permanently store your credentials.")
EXPORT = "It will refuse to export any Git directory that hasn't explicitly been marked for export."
CLIENTS = "--max-connections=<n>: Maximum number of concurrent clients, defaults to 32. Set it to zero for no limit."
FORMS = "In the second form, the last argument has to be an existing directory."
RM = "Remove files from the index, or from the working tree and the index. git rm will not remove a file from just your working directory."
HOTELS = "London: up to £180 per night. United States: up to USD 250 per night."
AUTO = ("With --auto, git gc checks whether any housekeeping is required; if not, it exits without performing "
        "any work. Most hosting providers use a single SSH account for pushing; that is, all users push to the "
        "git account. Unix systems can use the libsecret credential manager. Configure remote.<name>.tagOpt or "
        "use --no-tags. You need to set the configuration variable rerere.enabled to enable this command.")


LOG = "Use --stat to show a diffstat and --name-only to show only the names of changed files."
SOCKET = ("The cache is reached over an unencrypted socket. Fetching refs along with the objects they need "
          "works over multiple connections. The default behavior can be changed by setting the config "
          "variable fetch.parallel.")


TARGET = "Unless --force is given, the target file must not exist."
INSTALLERS = "Package installers are unaware of the constraints that system packages have on libraries."
PICK = "Given one or more existing commits, apply the change each one introduces, recording a new commit for each."
PACKAGES = ("The /usr/bin/python command is provided in the python-is-python2 package. These packages are not "
            "installed by default for new installations, but only for upgrades.")


def check(claim: str, source: str) -> str | None:
    """The whole source stands for the closest sentence and span: the checks are what is tested here."""
    return contradiction(claim, source, source, source)


@pytest.mark.parametrize(("claim", "source", "reason"), [
    ("Credentials are cached for 600 seconds by default.", CACHE, "number"),
    ("Credentials are cached for 900 minutes by default.", CACHE, "unit"),
    ("git gc prunes loose objects older than two days.", GC, "unit"),
    ("Hotels in London cost up to £250 per night.", HOTELS, "currency"),
    ("The prune age is set by gc.reflogExpire.", GC, "identifier"),
    ("Use `git gc --aggressive` to prune.", GC, "identifier"),
    ("The cache is reached over a TCP socket.", CACHE, "identifier"),
    ("git gc does not prune loose objects.", GC, "negated in the claim"),
    ("The cache manager stores your credentials permanently.", FETCH, "negated in the source"),
    ("Stored credentials are remembered after a configurable timeout.", CACHE, "antonym"),
    ("git gc always runs very quickly.", GC, "universal"),
    ("You must run git gc with --prune.", GC, "necessity"),
    ("Git handles the HTTP support for libcurl.", BUFFER, "swapped"),
    ("Unix systems can use the gnome-keyring credential manager.", AUTO, "identifier"),
    ("All hosting providers use a single SSH account.", AUTO, "universal"),
    ("In the third form, the last argument has to be an existing directory.", FORMS, "number"),
    ("git daemon accepts at most 32 clients per second.", CLIENTS, "unit"),
    ("git daemon exports every Git directory, marked or not.", EXPORT, "negated in the source"),
    ("--max-connections sets the maximum number of idle clients, defaults to 32.", CLIENTS, "substituted"),
    ("Unix systems can use the keychain credential manager.", AUTO, "substituted"),
    ("You need to set the configuration variable --no-tags to enable this command.", AUTO, "identifier in another"),
    ("In the second form, the last argument has to be an existing file.", FORMS, "substituted"),
    ("Use --name-only to show a diffstat and --stat to show only the names of changed files.", LOG, "swapped"),
    ("The cache is reached over an encrypted socket.", SOCKET, "negative prefix"),
    ("With git rm you can delete a file from your working directory alone.", RM, "negated in the source"),
    ("Use pip to install the application.", "Install the application with pipx.", "near-miss"),
    ("Sort the output with sort -k name.", "Sort the output with sort -k size.", "another value of -k"),
    ("git am keeps the [PATCH] prefix of the subject.", "The [PATCH] prefix of the subject is stripped by git am.", "antonym"),
], ids=["number", "unit", "unit-word-number", "currency", "dotted-key", "code-span", "acronym", "negated",
        "negation-dropped", "antonym", "always", "must", "swapped", "hyphenated-name", "all-of-something-else",
        "ordinal", "rate", "every-for-refuse-any", "modifier-substituted", "modifier-of-a-name",
        "identifier-of-another-slot", "last-word-substituted", "swapped-list", "negative-prefix",
        "not-just-against-only", "near-miss-name", "option-value", "keep-for-strip"])
def test_a_changed_claim_is_caught(claim, source, reason):
    found = check(claim, source)
    assert found is not None and reason in found


@pytest.mark.parametrize(("claim", "source"), [
    ("By default credentials stay in the cache for 900 seconds.", CACHE),
    ("git gc prunes loose objects older than two weeks unless gc.pruneExpire says otherwise.", GC),
    ("Credentials in the cache are never written to disk.", CACHE),                     # negated on both sides
    ("libcurl falls back to chunked transfer encoding when the data is larger.", BUFFER),  # "isn't known" is elsewhere
    ("The HTTP support for Git is handled by libcurl.", BUFFER),                         # a passive, not a swap
    ("Tags that point into the fetched histories are fetched too.", FETCH),
    ("git gc is normally quick and gives good disk space use.", GC),
    ("Each tag pointing into the fetched histories is fetched as well.", FETCH),        # "each" for "any"
    ("With --auto, git gc exits without doing anything if no housekeeping is needed.", AUTO),  # "if not," negates
    ("git gc keeps objects younger than two weeks unless gc.pruneExpire says otherwise.", GC),  # "unless" answers only
    ("git fetch can be told to skip tags.", AUTO),                                    # --no-tags is no negation
    ("Most providers have all users push to the git account.", AUTO),
    ("rerere only works once the rerere.enabled configuration variable is set.", AUTO),  # a passive without "by"
    ("git daemon only exports directories marked for export.", EXPORT),               # "only" answers "refuse"
    ("git rm removes files from the index, or from both the index and the working directory.", RM),  # not just
    ("git rm cannot delete a file from the working directory alone.", RM),
    ("Fetching refs together with the objects they need works over several connections.", SOCKET),
    ("The default behaviour can be changed by setting fetch.parallel.", SOCKET),
    ("The config variable fetch.parallel is set to change the default behavior.", SOCKET),
    ("Full-time staff get 27 days of leave a year.", "Full-time staff receive 27 days of leave a year."),
    ("Without --force, the command fails if the target file exists.", TARGET),
    ("Package installers do not know the constraints system packages have on libraries.", INSTALLERS),
    ("The installer uses the system packages.", "The installers use the system package."),
    ("Giving --xml=yes makes it use --leak-check=full automatically.",
     "If --xml=yes is given, it will automatically use --leak-check=full. --leak-resolution=high: merge leaks."),
], ids=["number", "number-word", "negated-both", "negation-elsewhere", "passive", "plain", "hedge-kept", "each",
        "elliptical-negation", "unless", "option-name", "all-of-the-same", "agentless-passive", "only-for-refuse",
        "not-just", "not-just-restated", "synonym-not-a-modifier-and-vague-quantity", "spelling-variant",
        "passive-reorder", "verb-before-a-number", "fails-if", "negative-prefix-answers",
        "inflections-are-no-near-miss", "an-option-with-its-own-value"])
def test_a_paraphrase_is_not_caught(claim, source):
    assert check(claim, source) is None


def test_a_one_word_negation_counts_in_the_closest_sentence_only():
    claim = "By default at most 32 clients connect at once; zero removes the limit."
    closest = "--max-connections=<n>: Maximum number of concurrent clients, defaults to 32."
    assert contradiction(claim, CLIENTS, closest, CLIENTS) is None
    assert "limit" in (contradiction(claim, CLIENTS, "Set it to zero for no limit.", CLIENTS) or "")


def test_the_title_and_section_name_what_the_passage_is_about():
    claim = "git cherry-pick records a new commit for each commit it applies."
    assert "cherry-pick" in (contradiction(claim, PICK, PICK, PICK) or "")
    assert contradiction(claim, PICK, PICK, PICK, heading="git-cherry-pick DESCRIPTION") is None


def test_the_sentence_the_claim_restates_word_for_word_counts_as_nearest():
    """The embedding's closest sentence may be another one about the same package."""
    claim = "The python-is-python2 packages are installed by default on new installations."
    first = PACKAGES.split(". ")[0] + "."
    assert "negated in the source" in (contradiction(claim, PACKAGES, first, first) or "")
