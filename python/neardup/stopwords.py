"""The built-in English stopword list, for the filter that keeps only shingles holding a stopword.

Advertising, navigation and boilerplate text is made of nouns and slogans; running prose is held
together by function words. Keeping only the shingles that contain at least one of these words
weights a page's prose over its chrome. The list is function words only (articles, pronouns,
prepositions, conjunctions, auxiliaries), written in case-folded form.
"""

ENGLISH = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me might more most must my myself no nor not now of off on once only or other ought our
    ours ourselves out over own same shall she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up upon very was we
    were what when where which while who whom whose why will with within without would you your
    yours yourself yourselves
    """.split()
)
