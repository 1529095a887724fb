from agentmem.jobs import start_job

start_job(snakemake)  # not a timing job: yield the CPU to those (docs/MEASUREMENT.md §1)

# One figure: agentmem.report.figures.<params.figure>.plot, for every plot rule (figures.smk).
# input.table   the table the figure draws (a CSV), or
# input.builds  the build records it draws (results/builds/{main}/{arm}.json);
#               neither: a figure of the code alone (the ER diagram, the capability grid)
# params.figure the module under agentmem.report.figures
# params.arms   optional: arm names, in drawing order
# input.seeds   optional: the across-seed table (results/tables/by_class_seeds.csv)
# params.options  optional: further keyword arguments of the figure's plot (a dict)
# output.svg    the figure (a PNG is written beside it)
from importlib import import_module

inputs, p = snakemake.input, snakemake.params
plot = import_module(f"agentmem.report.figures.{p.figure}").plot
data = [inputs.table] if "table" in inputs.keys() else []
if "builds" in inputs.keys():
    data.append(list(inputs.builds))
options = {"arms": list(p.arms)} if "arms" in p.keys() else {}
options.update(p.options if "options" in p.keys() else {})
if "seeds" in inputs.keys():
    options["seeds"] = inputs.seeds
plot(*data, out_svg=snakemake.output.svg, **options)
