# Training: the tiny engine on a CPU, or verl 0.9.1 + our plugin on a GPU cluster.

if ENGINE == "tiny":

    rule build_tiny_model:
        input:
            sft=synthetic_file("sft"),
        output:
            config=f"{INIT_DIR}/config.json",
        params:
            out=output_dir,
            data_dir=input_dir,
            config=CONFIG_FILE,
            settings=build_settings,
        conda:
            ENV_FILE
        log:
            f"{RES}/logs/train/build_{{model}}.log",
        benchmark:
            f"{RES}/benchmarks/train/build_{{model}}.tsv"
        threads: THREADS
        shell:
            "python -m pacs.tiny.build --config {params.config} --model {wildcards.model} "
            "--data-dir {params.data_dir} --out {params.out} > {log} 2>&1"

    rule sft_tiny_base:
        input:
            init=f"{INIT_DIR}/config.json",
            sft=synthetic_file("sft"),
            test=synthetic_file("test"),
        output:
            summary=f"{BASE_DIR}/sft_summary.json",
        params:
            init=input_dir,
            out=output_dir,
            config=CONFIG_FILE,
            settings=sft_settings,
        conda:
            ENV_FILE
        log:
            f"{RES}/logs/train/sft_{{model}}.log",
        benchmark:
            f"{RES}/benchmarks/train/sft_{{model}}.tsv"
        # Every core: nothing else can run before the base model exists, and the weights do not
        # depend on the thread count (tests/tiny/test_sft.py). Snakemake lowers threads to
        # --cores on one machine; a constant, not workflow.cores, which a cluster run (--profile
        # slurm, --jobs) does not define.
        threads: 8
        shell:
            "python -m pacs.tiny.sft --config {params.config} --model {wildcards.model} "
            "--init {params.init} --data {input.sft} --eval-data {input.test} --out {params.out} "
            "--threads {threads} > {log} 2>&1"

    rule train_tiny:
        input:
            base=f"{BASE_DIR}/sft_summary.json",
            train=synthetic_file("train"),
            test=synthetic_file("test"),
        output:
            summary=f"{TRAIN_DIR}/summary.json",
        params:
            base=input_dir,
            out=output_dir,
            config=CONFIG_FILE,
            settings=train_settings,
        conda:
            ENV_FILE
        log:
            f"{RES}/logs/train/{{model}}/{{run}}/seed{{seed}}.log",
        benchmark:
            f"{RES}/benchmarks/train/{{model}}/{{run}}/seed{{seed}}.tsv"
        threads: THREADS
        shell:
            "python -m pacs.tiny.train --config {params.config} --method {wildcards.run} "
            "--seed {wildcards.seed} --base {params.base} --train-data {input.train} "
            "--eval-data {input.test} --out {params.out} --threads {threads} "
            # Snakemake reruns this job when its settings changed: a checkpoint of the old
            # settings is then discarded; one of the same settings (a crashed job) is resumed.
            "--on-mismatch restart > {log} 2>&1"

else:

    rule prepare_train:
        input:
            train_tokenizer_download,
        output:
            TRAIN_PARQUET,
        params:
            source=train_source_args,
        localrule: True  # downloads DeepScaleR: compute nodes may have no internet
        conda:
            ENV_FILE
        log:
            f"{RES}/logs/data/prepare_train.log",
        benchmark:
            f"{RES}/benchmarks/data/prepare_train.tsv"
        shell:
            "python -m pacs.data prepare-train {params.source} --out {output} > {log} 2>&1"

    rule train_verl:
        input:
            train=TRAIN_PARQUET,
            model=model_download,
            preflight=PREFLIGHT,  # preflight.smk: the checks ran on a compute node first
        output:
            summary=f"{TRAIN_DIR}/summary.json",
        params:
            out=output_dir,
            config=CONFIG_FILE,
            model_path=model_path_arg,
            settings=train_settings,
        conda:
            ENV_FILE
        log:
            f"{RES}/logs/train/{{model}}/{{run}}/seed{{seed}}.log",
        benchmark:
            f"{RES}/benchmarks/train/{{model}}/{{run}}/seed{{seed}}.tsv"
        resources:
            nodes=verl_nodes,
            # the profile's set-resources.train_verl.network_interface (a resource, not a param:
            # changing it reruns nothing); shards.smk
            network_interface=network_interface_default,
            verl_device=verl_device_default,  # cpu: a CPU-only cluster (the profile says so)
            # the profile's set-resources.train_verl.ray_start_wait_s: Ray's node start-up wait
            ray_start_wait_s=ray_start_wait_default,
        shell:
            "RAY_NETWORK_INTERFACE={resources.network_interface:q} "
            "PACS_RAY_START_WAIT_S={resources.ray_start_wait_s:q} "
            "python -m pacs.verl_plugin.launch.train --device {resources.verl_device} "
            "--config {params.config} --run {wildcards.run} "
            "--model {wildcards.model} --model-path {params.model_path} --seed {wildcards.seed} "
            "--train-file {input.train} "
            # As train_tiny: a rerun for changed training settings sets the old run aside
            # (previous-<time>/) and starts over; a crashed job of the same settings resumes.
            "--out {params.out} --on-mismatch restart > {log} 2>&1"

    rule merge_verl_checkpoint:
        input:
            summary=f"{TRAIN_DIR}/summary.json",
        output:
            config=f"{CHECKPOINT_DIR}/config.json",
        params:
            run_dir=input_dir,
            out=output_dir,
        conda:
            ENV_FILE
        log:
            f"{RES}/logs/merge/{{model}}/{{run}}/seed{{seed}}_step{{step}}.log",
        benchmark:
            f"{RES}/benchmarks/merge/{{model}}/{{run}}/seed{{seed}}_step{{step}}.tsv"
        shell:
            "python -m pacs.verl_plugin.launch.merge --run-dir {params.run_dir} --step {wildcards.step} "
            "--out {params.out} > {log} 2>&1"
