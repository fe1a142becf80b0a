#!/bin/bash
#SBATCH --job-name=mirror
#SBATCH --array=0-7
#SBATCH --output=logs/mirror-%a.log
cd /shared/mirror
srun batchdl run mirror.yaml --shard auto --progress never --report "reports/report-{shard}.json"
