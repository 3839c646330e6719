"""Text analysis shared by the write and the read side: sentences, entity mentions, time
references and time parsing, word priors, relation patterns, chunking. Imports nothing else
in the core."""
