#!/bin/bash
{{! loom: Slurm batch script for one catalog job. Render with --escape shell:
    every escaped tag becomes one single-quoted shell word. The #SBATCH lines
    use raw tags for values that the catalog validates (name, gpu_type) or
    computes (numbers), because sbatch does not unquote single quotes. }}
#SBATCH --job-name={{&name}}
#SBATCH --output={{#output}}{{&output}}{{/output}}{{^output}}{{&name}}-%j.out{{/output}}
#SBATCH --ntasks=1
#SBATCH --cpus-per-task={{&resources.cpus}}
#SBATCH --mem