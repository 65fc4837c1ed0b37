"""The claim judge and the gate: does a provision support a sentence about the law, and what may the reader see?

One job a module, each importing only those listed before it:

- ``polarity``: whether a sentence says the opposite of the clause it shares its words with;
- ``facts``: the numbers, amounts, dates, periods, named bodies and kinds of penalty a provision must state;
- ``meaning``: how much of a sentence's meaning a provision covers, and where it says it;
- ``topic``: the question's topic words a provision must speak of;
- ``rules``: the rules judge, composing the four into one verdict (``Support``);
- ``learned``: a cross-encoder and an LLM judge, with the rules' hard checks on top;
- ``judge``: the ``ClaimJudge`` seam and ``build_claim_judge``, the judge the settings name;
- ``gate``: an answer split into sentences, each judged against its citations, and the decision;
- ``streaming``: the gate run as a model's answer streams, each sentence sent only once it has passed;
- ``choice``: the final answer: the model's, trimmed, or the quote-only answer, never less verified.
"""
