"""`make mutate`: would the tests notice if a defence were gone? (docs/quality.md, "Mutation testing")."""
