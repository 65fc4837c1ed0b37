"""The query graph's nodes, by job: screening the question, researching it, and answering it."""
