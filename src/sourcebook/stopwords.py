"""English stopwords, shared by keyword search and answer scoring.

Dropping them from keyword queries is what Lucene's English analyzer does: they carry
almost no BM25 weight, yet a query term such as "the" matches nearly every chunk and
makes FTS5 score them all (at 100k chunks, the difference between ~10 and ~100+ ms).
"""

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves""".split()
)
