from agentmem.jobs import run_entry

# One experiment with no script of its own: the rule names its library function,
# params.entry = "package.module:function", called as function(input, output, params)
# (agentmem.jobs.run_entry; untimed unless params.timed).
run_entry(snakemake)
