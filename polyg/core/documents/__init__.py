"""Documents generated from templates, with user Cypher kept in bounds."""
