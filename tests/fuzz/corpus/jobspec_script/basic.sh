#!/bin/bash
#SBATCH -J t -c 4 --gres=gpu:a100:2 --time=1-02:00:00
#SBATCH --mem=16G -o out-%j.log --array=0-9%2 --dependency=afterok:1
#LOOM --gpu-share 250m --label a=b
echo hi
